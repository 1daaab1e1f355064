// The isolate host as the rest of the service sees it: `createIsolateHost(options).run(request)`.
// It validates and compiles the program in this process, queues it for a supervised worker,
// brokers the program's tool calls to `onCall`, and turns whatever the worker reports (or its
// death, or its silence) into one RunOutcome. The broker counts and caps calls and sizes; it does
// not decide which calls may overlap: `onCall` (the tool pipeline's gate) schedules them.
// Invariants: run() never rejects; every run settles exactly once (finishRun); a worker's message
// is honoured only for runs dispatched to that worker; nothing of a worker's text reaches the caller
// without a size cap and a shape check; every deadline has a host-side backstop that kills the worker.
// Fairness: the runs of one owner (a tenant) hold at most `ownerShare` of what the workers open to
// everybody take; the queue is served in order, skipping the runs of owners at their share, so
// one tenant's queue of long-computing programs never keeps another tenant's run waiting.
import { isSandboxError, messageOf } from '../errors.ts';
import { compileProgram } from './compile.ts';
import { BUDGET_SHARE, runsPerWorker, waitingReserveMb, workerCapacityMb } from './memory.ts';
import type { WorkerOutcome, WorkerToHost } from './protocol.ts';
import { ALIVE_MS, clip, MAX_ERROR_CHARS } from './protocol.ts';
import { mapStack } from './stack.ts';
import type { WorkerHandle } from './supervisor.ts';
import { createSupervisor } from './supervisor.ts';
import type {
  FailureKind,
  IsolateHost,
  IsolateHostOptions,
  JsonValue,
  RunLimits,
  RunOutcome,
  RunRequest,
} from './types.ts';
import { DEFAULT_LIMITS } from './types.ts';
import { checkRequest } from './validate.ts';

type Settled =
  | { ok: true; value: JsonValue | undefined; logs: string[] }
  | { ok: false; kind: FailureKind; message: string; logs: string[] };

interface HostRun {
  id: number;
  request: RunRequest;
  limits: RunLimits;
  src: string;
  map: string;
  globalsJson: string;
  startedAt: number;
  worker?: WorkerHandle;
  /** The worker is dedicated to this run, which may enter its isolate inline (IsolateHostOptions.inline). */
  inline: boolean;
  calls: AbortController;
  callCount: number;
  /**
   * Calls handed to onCall and not settled yet, at most limits.maxInFlight: while above 0 the
   * program is waiting, not computing.
   */
  pending: number;
  /** Highest `pending` seen (RunStats.maxInFlight). */
  maxPending: number;
  /** Calls made while `pending` was at its cap, in the order the program made them. */
  held: HeldCall[];
  timers: NodeJS.Timeout[];
  detach: () => void;
  resolve: (outcome: RunOutcome) => void;
  settled: boolean;
  /** Counted in `held` (dispatched, with an owner) until it settles. */
  counted: boolean;
}

/** A call that waits for one of the run's pending calls to settle. */
interface HeldCall {
  name: string;
  args: JsonValue;
  callId: number;
}

const FAILURE_KINDS = new Set<FailureKind>([
  'compile',
  'runtime',
  'timeout',
  'memory',
  'output_limit',
  'aborted',
  'crash',
  'limit',
]);
const MAX_LOG_LINES = 10_000;
/**
 * A run dedicated a worker (inline) that has waited this long on its tool calls gives the worker
 * back to everybody: a program waiting minutes on a slow tool or an approval gains nothing from a
 * worker of its own, and would close it to all other runs meanwhile.
 */
const INLINE_RELEASE_MS = 200;

export const createIsolateHost = (options: IsolateHostOptions = {}): IsolateHost => {
  const defaults: RunLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const killGraceMs = options.killGraceMs ?? 1000;
  const workerRssMb = options.workerRssMb ?? 1024;
  // A worker holds only as many runs as their memory fits in (memory.ts): a program may keep its
  // whole heap while it waits, and the worker's budget has to hold all of them at once.
  const capacityMb = workerCapacityMb(workerRssMb, defaults.memoryMb);
  const maxRunsPerWorker =
    options.maxRunsPerWorker ?? Math.min(64, runsPerWorker(workerRssMb, defaults.memoryMb));
  const fits = (handle: WorkerHandle, run: HostRun): boolean =>
    handle.runs.size === 0 || handle.reservedMb + waitingReserveMb(run.limits.memoryMb) <= capacityMb;
  const inlineEnabled = options.inline ?? true;
  const ownerShare = options.ownerShare ?? 0.5;
  if (!(ownerShare > 0 && ownerShare <= 1))
    throw new RangeError(`ownerShare must be in (0, 1], got ${String(options.ownerShare)}`);
  /** Dispatched, unsettled runs per owner. */
  const held = new Map<string, number>();
  const runs = new Map<number, HostRun>();
  const queue: HostRun[] = [];
  let nextId = 0;
  let closed = false;

  const finishRun = (run: HostRun, outcome: Settled): void => {
    if (run.settled) return;
    run.settled = true;
    for (const timer of run.timers) clearTimeout(timer);
    run.detach();
    run.calls.abort();
    run.held.length = 0;
    runs.delete(run.id);
    if (run.worker?.runs.delete(run.id)) run.worker.reservedMb -= waitingReserveMb(run.limits.memoryMb);
    if (run.worker?.inlineRun === run.id) run.worker.inlineRun = undefined;
    if (run.counted) {
      const owner = run.request.owner as string;
      const left = (held.get(owner) ?? 1) - 1;
      if (left <= 0) held.delete(owner);
      else held.set(owner, left);
    }
    const index = queue.indexOf(run);
    if (index >= 0) queue.splice(index, 1);
    const stats = {
      calls: run.callCount,
      maxInFlight: run.maxPending,
      wallMs: performance.now() - run.startedAt,
      inline: run.inline,
    };
    run.resolve({ ...outcome, stats } as RunOutcome);
    setImmediate(pump);
  };

  const supervisor = createSupervisor({
    count: options.workers ?? 2,
    heapMb: options.workerHeapMb ?? 256,
    rssMb: workerRssMb,
    killGraceMs,
    workerArgs: {
      prewarm: options.prewarm ?? 2,
      memoryMb: defaults.memoryMb,
      budgetMb: Math.floor(workerRssMb * BUDGET_SHARE),
    },
    onReady: () => pump(),
    onMessage: (handle, message) => onWorkerMessage(handle, message),
    onExit: (handle, description) => {
      for (const id of [...handle.runs]) {
        const run = runs.get(id);
        if (run)
          finishRun(run, {
            ok: false,
            kind: 'crash',
            message: `the isolate worker stopped (${description}); the run was lost`,
            logs: [],
          });
      }
      handle.runs.clear();
      handle.reservedMb = 0;
    },
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
  });

  // An inline entry holds its worker's thread for at most the run's CPU budget (isolated-vm's
  // timeout); a worker silent for longer is stuck where no timeout reaches (a non-interruptible
  // builtin, program getters run by isolated-vm after the entry): it is killed, failing only the
  // run it was dedicated to.
  const watchdog = setInterval(() => {
    const now = performance.now();
    for (const handle of supervisor.handles()) {
      const run = handle.inlineRun === undefined ? undefined : runs.get(handle.inlineRun);
      if (!run || now - handle.aliveAt <= run.limits.cpuMs + killGraceMs + ALIVE_MS) continue;
      finishRun(run, {
        ok: false,
        kind: 'timeout',
        message: `the program used more than ${run.limits.cpuMs} ms of CPU time`,
        logs: [],
      });
      supervisor.kill(handle, 'an inline entry ran past its CPU budget');
    }
  }, ALIVE_MS);
  watchdog.unref();

  /** Whether the run's owner may have one more run now: under its share of the open workers' runs. */
  const underShare = (run: HostRun): boolean => {
    const owner = run.request.owner;
    if (owner === undefined) return true;
    const open = supervisor.handles().filter((h) => h.inlineRun === undefined).length;
    const share = Math.max(1, Math.ceil(open * maxRunsPerWorker * ownerShare));
    return (held.get(owner) ?? 0) < share;
  };

  const pump = (): void => {
    for (let i = 0; i < queue.length; ) {
      const next = queue[i]!;
      // An owner at its share waits; the runs of others behind it go first.
      if (!underShare(next)) {
        i++;
        continue;
      }
      // A worker dedicated to an inline run takes nothing else until that run ends.
      const candidates = supervisor
        .handles()
        .filter(
          (h) => h.ready && h.runs.size < maxRunsPerWorker && h.inlineRun === undefined && fits(h, next),
        );
      if (candidates.length === 0) return;
      const handle = candidates.reduce((a, b) => (preferred(b, a) ? b : a));
      queue.splice(i, 1);
      dispatch(next, handle);
    }
  };

  const dispatch = (run: HostRun, handle: WorkerHandle) => {
    // Inline only on an idle worker, and only while another worker (running, or starting up) stays
    // open to everybody else: an inline entry occupies its worker's thread while the program computes.
    run.inline =
      inlineEnabled &&
      run.request.inline !== false &&
      handle.runs.size === 0 &&
      supervisor.handles().some((h) => h !== handle && h.inlineRun === undefined);
    if (run.inline) {
      handle.inlineRun = run.id;
      handle.aliveAt = performance.now();
    }
    run.worker = handle;
    if (run.request.owner !== undefined) {
      run.counted = true;
      held.set(run.request.owner, (held.get(run.request.owner) ?? 0) + 1);
    }
    handle.runs.add(run.id);
    handle.reservedMb += waitingReserveMb(run.limits.memoryMb);
    handle.slots = Math.max(0, handle.slots - 1);
    const { limits } = run;
    const sent = supervisor.send(handle, {
      t: 'run',
      id: run.id,
      src: run.src,
      bindings: [...new Set(run.request.bindings)],
      globalsJson: run.globalsJson,
      inline: run.inline,
      limits: {
        wallMs: limits.wallMs,
        cpuMs: limits.cpuMs,
        memoryMb: limits.memoryMb,
        maxOutputBytes: limits.maxOutputBytes,
        maxCallBytes: limits.maxCallBytes,
        maxResultBytes: limits.maxResultBytes,
        maxCalls: limits.maxCalls,
      },
    });
    if (!sent)
      return finishRun(run, {
        ok: false,
        kind: 'crash',
        message: 'the isolate worker could not take the run',
        logs: [],
      });
    // Backstop: the worker ends the run itself at wallMs; if it has not answered by then plus the
    // grace period it is stuck (uninterruptible V8 work, a hung dispose) and is killed.
    run.timers.push(
      setTimeout(() => {
        finishRun(run, {
          ok: false,
          kind: 'timeout',
          message: `the program ran longer than ${limits.wallMs} ms`,
          logs: [],
        });
        supervisor.kill(handle, 'run deadline passed without an answer');
      }, limits.wallMs + killGraceMs),
    );
  };

  const onWorkerMessage = (handle: WorkerHandle, message: WorkerToHost) => {
    if (message.t === 'alive') {
      handle.aliveAt = performance.now();
      return;
    }
    if (message.t === 'pool') {
      handle.slots = Number.isSafeInteger(message.ready) ? Math.max(0, message.ready) : 0;
      const warming = message.warming === true;
      if (warming && !handle.warming) handle.warmingSince = performance.now();
      handle.warming = warming;
      return;
    }
    const run = typeof message.t === 'string' && 'id' in message ? runs.get(message.id) : undefined;
    if (!run || run.worker !== handle) return;
    if (message.t === 'released') {
      if (handle.inlineRun === run.id) handle.inlineRun = undefined;
      return pump();
    }
    if (message.t === 'done') return finishRun(run, settle(run, message.outcome));
    if (message.t === 'call') onProgramCall(run, handle, message);
  };

  const onProgramCall = (
    run: HostRun,
    handle: WorkerHandle,
    message: Extract<WorkerToHost, { t: 'call' }>,
  ) => {
    // Replies of one tick leave in one frame (see outbox.ts).
    const reply = (envelope: string) => {
      if (!run.settled)
        supervisor.post(handle, { t: 'result', id: run.id, callId: message.callId, envelope });
    };
    const { name, argsJson, callId } = message;
    if (
      typeof name !== 'string' ||
      !run.request.bindings.includes(name) ||
      typeof argsJson !== 'string' ||
      typeof callId !== 'number'
    ) {
      return finishRun(run, {
        ok: false,
        kind: 'crash',
        message: 'the isolate worker sent a malformed call',
        logs: [],
      });
    }
    if (++run.callCount > run.limits.maxCalls || argsJson.length > run.limits.maxCallBytes) {
      return finishRun(run, {
        ok: false,
        kind: 'limit',
        message: `call limits exceeded (${run.limits.maxCalls} calls)`,
        logs: [],
      });
    }
    let args: JsonValue;
    try {
      args = JSON.parse(argsJson) as JsonValue;
    } catch {
      return reply(errorEnvelope('INVALID_ARGUMENTS', 'the arguments are not valid JSON'));
    }
    if (run.pending >= run.limits.maxInFlight) run.held.push({ name, args, callId });
    else void brokerCall(run, handle, { name, args, callId });
  };

  /** Hands one call to onCall and its settlement back to the program; then the next held call. */
  const brokerCall = async (run: HostRun, handle: WorkerHandle, call: HeldCall): Promise<void> => {
    const reply = (envelope: string) => {
      if (!run.settled) supervisor.post(handle, { t: 'result', id: run.id, callId: call.callId, envelope });
    };
    const release = run.pending++ === 0 ? releaseWhileWaiting(run, handle) : undefined;
    if (run.pending > run.maxPending) run.maxPending = run.pending;
    try {
      const value = await run.request.onCall(call.name, call.args, run.calls.signal);
      reply(valueEnvelope(value, run.limits.maxCallResultBytes));
    } catch (error) {
      const code = isSandboxError(error) ? error.code : 'TOOL_FAILED';
      reply(errorEnvelope(code, messageOf(error)));
    } finally {
      run.pending--;
      if (release !== undefined) clearTimeout(release);
    }
    const next = run.calls.signal.aborted ? undefined : run.held.shift();
    if (next !== undefined) void brokerCall(run, handle, next);
  };

  /**
   * Arms the release of the run's dedicated worker for when its waiting lasts INLINE_RELEASE_MS.
   * Once released, the worker takes other runs again and enters this run's isolate on the thread
   * pool from then on.
   */
  const releaseWhileWaiting = (run: HostRun, handle: WorkerHandle): NodeJS.Timeout | undefined => {
    if (handle.inlineRun !== run.id) return undefined;
    const timer = setTimeout(() => {
      if (run.settled || run.pending === 0 || handle.inlineRun !== run.id) return;
      // The worker answers `released` from its event loop: proof that no inline entry of this run
      // holds its thread, and that none will from then on. Only then does it take other runs.
      supervisor.post(handle, { t: 'release', id: run.id });
    }, INLINE_RELEASE_MS);
    run.timers.push(timer);
    return timer;
  };

  const run = (request: RunRequest): Promise<RunOutcome> =>
    new Promise<RunOutcome>((resolve) => {
      const startedAt = performance.now();
      const limits: RunLimits = { ...defaults, ...request.limits };
      const fail = (kind: FailureKind, message: string) =>
        resolve({
          ok: false,
          kind,
          message,
          logs: [],
          stats: { calls: 0, maxInFlight: 0, wallMs: performance.now() - startedAt, inline: false },
        });
      if (closed) return fail('aborted', 'the isolate host is shut down');
      const problem = checkRequest(request, limits);
      if (problem) return fail(problem.kind, problem.message);
      if (request.signal?.aborted) return fail('aborted', 'the run was aborted before it started');
      void compileProgram(request.code, request.language ?? 'ts').then((compiled) => {
        if (!compiled.ok) return fail('compile', compiled.message);
        if (closed) return fail('aborted', 'the isolate host is shut down');
        const hostRun: HostRun = {
          id: ++nextId,
          request,
          limits,
          src: compiled.program.js,
          map: compiled.program.map,
          globalsJson: JSON.stringify(request.globals ?? {}),
          startedAt,
          inline: false,
          calls: new AbortController(),
          callCount: 0,
          pending: 0,
          maxPending: 0,
          held: [],
          timers: [],
          detach: () => undefined,
          resolve,
          settled: false,
          counted: false,
        };
        const signal = request.signal;
        if (signal) {
          const onAbort = () => onRunAborted(hostRun);
          signal.addEventListener('abort', onAbort, { once: true });
          hostRun.detach = () => signal.removeEventListener('abort', onAbort);
          if (signal.aborted) return fail('aborted', 'the run was aborted before it started');
        }
        runs.set(hostRun.id, hostRun);
        queue.push(hostRun);
        pump();
      });
    });

  const onRunAborted = (run: HostRun) => {
    const aborted: Settled = { ok: false, kind: 'aborted', message: 'the run was aborted', logs: [] };
    if (!run.worker) return finishRun(run, aborted);
    const handle = run.worker;
    run.calls.abort();
    supervisor.send(handle, { t: 'cancel', id: run.id });
    run.timers.push(
      setTimeout(() => {
        finishRun(run, aborted);
        supervisor.kill(handle, 'cancelled run did not end');
      }, killGraceMs),
    );
  };

  return {
    run,
    limits: Object.freeze({ ...defaults }),
    workerPids: () => supervisor.handles().map((h) => h.pid),
    close: async () => {
      closed = true;
      clearInterval(watchdog);
      for (const hostRun of [...runs.values()]) {
        finishRun(hostRun, {
          ok: false,
          kind: 'aborted',
          message: 'the isolate host is shutting down',
          logs: [],
        });
      }
      await supervisor.close();
    },
  };
};

/**
 * Routing: a worker that can start a run at once (an untouched isolate ready, no isolate being
 * created on its loop) beats one that cannot; then fewer runs in flight; then more ready isolates;
 * between two workers still creating isolates, the one that began first (it frees its loop sooner).
 */
const preferred = (a: WorkerHandle, b: WorkerHandle): boolean => {
  const aNow = a.slots > 0 && !a.warming;
  const bNow = b.slots > 0 && !b.warming;
  if (aNow !== bNow) return aNow;
  if (a.runs.size !== b.runs.size) return a.runs.size < b.runs.size;
  if (a.slots > 0 !== b.slots > 0) return a.slots > 0;
  if (a.warming && b.warming) return a.warmingSince < b.warmingSince;
  return a.slots > b.slots;
};

const errorEnvelope = (code: string, message: string): string =>
  JSON.stringify({ ok: false, error: { code: clip(code, 64), message: clip(message, MAX_ERROR_CHARS) } });

/** Serialise a host value for the isolate; the size is checked here, before anything is copied in. */
const valueEnvelope = (value: JsonValue | undefined, maxBytes: number): string => {
  let json: string | undefined;
  try {
    json = value === undefined ? undefined : JSON.stringify(value);
  } catch {
    return errorEnvelope('TOOL_FAILED', 'the tool returned a value that is not JSON');
  }
  if (json === undefined) return '{"ok":true}';
  if (json.length > maxBytes) {
    return errorEnvelope(
      'LIMIT_EXCEEDED',
      `the tool result is ${json.length} bytes of JSON, over the ${maxBytes}-byte limit for programs`,
    );
  }
  return `{"ok":true,"value":${json}}`;
};

/** Turn a worker's report into the caller's outcome: shape-checked, capped, stack mapped to the model's lines. */
const settle = (run: HostRun, outcome: WorkerOutcome): Settled => {
  const raw = outcome as Partial<Record<string, unknown>>;
  const logs = Array.isArray(raw.logs)
    ? raw.logs.filter((l): l is string => typeof l === 'string').slice(0, MAX_LOG_LINES)
    : [];
  if (raw.ok === true) {
    if (raw.valueJson === undefined) return { ok: true, value: undefined, logs };
    try {
      return { ok: true, value: JSON.parse(String(raw.valueJson)) as JsonValue, logs };
    } catch {
      return { ok: false, kind: 'runtime', message: 'the program returned an unreadable value', logs };
    }
  }
  const kind = FAILURE_KINDS.has(raw.kind as FailureKind) ? (raw.kind as FailureKind) : 'crash';
  let message = clip(typeof raw.message === 'string' ? raw.message : 'the run failed', MAX_ERROR_CHARS);
  if (kind === 'runtime' && typeof raw.stack === 'string') {
    const frames = mapStack(raw.stack, run.map);
    if (frames.length > 0) message = `${message}\n${frames.join('\n')}`;
  }
  return { ok: false, kind, message, logs };
};
