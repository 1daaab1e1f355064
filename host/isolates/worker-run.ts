// One program run inside a worker process: a pre-warmed (or fresh) isolate slot, the bridge
// callbacks, and the limits the worker enforces itself (wall clock, CPU time, output, call count and
// sizes). Invariants: a slot serves exactly one run and is disposed when the run finishes, whatever
// the reason; `finish` runs once and always sends exactly one `done`; every string that comes out of
// the isolate is treated as untrusted text and size-checked.
//
// Entering the isolate (the start, and each delivery of settled calls) happens one of two ways,
// chosen per entry by the worker (`inline()`): queued on isolated-vm's thread pool, or inline on
// this thread with applySync while this run is the worker's only one. Inline saves the two thread
// hand-offs of every call (isolate thread -> this thread -> isolate thread), about a third of a
// brokered call's cost; while an inline entry runs, this thread does nothing else, so the worker
// only goes inline when no other run could wait behind it.
//
// The CPU budget counts CPU the worker process really spent on the run, never time it waited for
// a core (isolated-vm's `cpuTime` and `timeout` count wall-clock time while the isolate is entered:
// cpu.ts). Queued entries are charged by the worker's meter every poll (cpu.ts). An inline entry
// runs on this thread while the run is the worker's only one, so what the process used during it
// is the entry's; nothing polls meanwhile, and its one interrupt is isolated-vm's timeout, which
// ends the entry for good. That timeout is the rest of the wall clock, or INLINE_WAIT_FACTOR times
// the CPU budget left (protocol.ts) if sooner; when it fires, the CPU measured decides: budget
// spent (a busy loop) is the CPU-budget error, else the program was starved past that factor.
//
// A program resumes only inside an entry (the prelude leaves it no timer or other event of its
// own), and an entry returns only after its microtasks ran. So when every entry has returned (the
// inline one, and each queued one, whose return the worker observes), no call of the run is
// pending and it has no outcome, nothing can ever resume it: it ends at once as `stalled` instead
// of holding its slot until the wall clock. That check is a comparison after each entry.
import ivm from 'isolated-vm';
import type { Metered } from './cpu.ts';
import { LOG_LIMIT, PRELUDE_FILENAME, PRELUDE_SOURCE } from './prelude.ts';
import type { HostToWorker, WorkerOutcome, WorkerToHost } from './protocol.ts';
import { clip, INLINE_WAIT_FACTOR, MAX_ERROR_CHARS, MAX_STACK_CHARS } from './protocol.ts';

type RunMessage = Extract<HostToWorker, { t: 'run' }>;
type Failure = Omit<Extract<WorkerOutcome, { ok: false }>, 'ok' | 'logs'> & { ok?: false };
type Settled = { ok: true; valueJson: string | undefined } | Failure;

interface RunHooks {
  call(callId: unknown, name: unknown, argsJson: unknown): void;
  log(code: unknown, text: unknown): void;
  done(result: unknown): void;
}

/** An isolate + context with the prelude installed and nothing of a program yet. */
export interface Slot {
  memoryMb: number;
  isolate: ivm.Isolate;
  /** Starts the program: (src, bindingsJson, globalsJson, limitsJson, inline); the outcome arrives through `done`. */
  run: ivm.Reference<(...args: unknown[]) => void>;
  /**
   * Settles calls inside the isolate, one entry for many: (callIds, envelopeJsons, inline), or
   * (callId, envelopeJson, inline) for one.
   */
  deliver: ivm.Reference<(callIds: number[] | number, envelopes: string[] | string, inline: boolean) => void>;
  attach(hooks: RunHooks): void;
}

export const createSlot = async (memoryMb: number): Promise<Slot> => {
  const isolate = new ivm.Isolate({
    memoryLimit: memoryMb,
    // V8 lost control of the isolate: the documented answer is to end the process; the host sees a crash.
    onCatastrophicError: (message) => {
      process.stderr.write(`isolate catastrophic error: ${message}\n`);
      process.abort();
    },
  });
  let hooks: RunHooks | undefined;
  try {
    const context = await isolate.createContext();
    const script = await isolate.compileScript(PRELUDE_SOURCE, { filename: PRELUDE_FILENAME });
    const install = await script.run(context, { reference: true });
    const onCall = (id: unknown, name: unknown, args: unknown) => hooks?.call(id, name, args);
    // From the pool thread the isolate must not wait for this thread: ignored. Inline (this thread
    // is the one running the isolate) a plain Callback runs at once.
    const callQueued = new ivm.Callback(onCall, { ignored: true });
    const callInline = new ivm.Callback(onCall);
    const onLog = (code: unknown, text: unknown) => hooks?.log(code, text);
    const logQueued = new ivm.Callback(onLog, { ignored: true });
    const logInline = new ivm.Callback(onLog);
    const onDone = (result: unknown) => hooks?.done(result);
    const doneQueued = new ivm.Callback(onDone, { ignored: true });
    const doneInline = new ivm.Callback(onDone);
    const installArgs = [callQueued, callInline, logQueued, logInline, doneQueued, doneInline];
    const api = (await install.apply(undefined, installArgs, {
      result: { reference: true },
    })) as ivm.Reference<{
      run: unknown;
      deliver: unknown;
    }>;
    const run = (await api.get('run', { reference: true })) as Slot['run'];
    const deliver = (await api.get('deliver', { reference: true })) as Slot['deliver'];
    api.release();
    install.release();
    script.release();
    return {
      memoryMb,
      isolate,
      run,
      deliver,
      attach: (h) => {
        hooks = h;
      },
    };
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose();
    throw error;
  }
};

export interface ActiveRun extends Metered {
  id: number;
  /** The isolate's heap limit (isolated-vm `memoryLimit`), in MB. */
  readonly memoryMb: number;
  /** The worker was told it may enter this run's isolate on its own thread. */
  readonly inline: boolean;
  /** Enters the isolate with the program (once, after the worker registered the run). */
  begin(): void;
  /** Settles the given calls (host call id, envelope); unknown ids and non-strings are ignored. */
  deliver(results: ReadonlyArray<readonly [unknown, unknown]>): void;
  cancel(): void;
  /**
   * Called by the worker's poll after the meter's sample() and charge() (which end the run past its
   * CPU budget): ends the run if its isolate died. Returns the CPU the run was charged since the
   * previous check, queued and inline entries alike, in ns (0: it did not run), or undefined once
   * the run is over (memory.ts Governed).
   */
  check(): number | undefined;
  /** Ends the run as `memory`: the worker saw it hold more than its limit allows (memory.ts). */
  outOfMemory(): void;
  /** The isolate's V8 heap plus its external memory, in bytes; undefined once it is gone. */
  heapBytes(): Promise<number | undefined>;
}

/** Where a run's messages go: calls are queued for the tick's frame, the outcome leaves at once. */
export interface RunIo {
  call(message: Extract<WorkerToHost, { t: 'call' }>): void;
  done(outcome: WorkerOutcome): void;
  /** True when this run may enter its isolate on the worker's own thread (it is the only run). */
  inline(): boolean;
}

export const startRun = (slot: Slot, msg: RunMessage, io: RunIo): ActiveRun => {
  const { limits } = msg;
  const bindings = new Set(msg.bindings);
  const logs: string[] = [];
  const pending = new Map<number, number>(); // host call id -> the isolate's own call id
  let outBytes = 0;
  let calls = 0;
  let nextCallId = 0;
  let finished = false;

  // True while an inline entry runs on this thread. A run that ends inside one (a limit hit in a
  // callback) is reported, and its isolate disposed, when the entry has returned: never from
  // inside the isolate's own callback, and never while this thread is still busy with it (the host
  // would hand this worker a new run that then waits).
  let inEntry = false;
  /** Queued entries not returned yet (their microtasks included). */
  let queued = 0;
  let report: WorkerOutcome | undefined;
  const close = (): void => {
    if (report === undefined) return;
    io.done(report);
    report = undefined;
    try {
      if (!slot.isolate.isDisposed) slot.isolate.dispose();
    } catch {
      // already disposed by a memory failure: nothing left to release
    }
  };
  const finish = (outcome: Settled) => {
    if (finished) return;
    finished = true;
    clearTimeout(wall);
    pending.clear();
    report = outcome.ok === true ? { ...outcome, logs } : { ...outcome, ok: false, logs };
    if (!inEntry) close();
  };

  slot.attach({
    call: (isolateCallId, name, argsJson) => {
      if (finished) return;
      if (
        typeof isolateCallId !== 'number' ||
        typeof name !== 'string' ||
        typeof argsJson !== 'string' ||
        !bindings.has(name)
      ) {
        return finish({ kind: 'runtime', message: 'the bridge was called with an unknown tool name' });
      }
      if (++calls > limits.maxCalls || argsJson.length > limits.maxCallBytes) {
        return finish({
          kind: 'limit',
          message: `call limits exceeded (${limits.maxCalls} calls, ${limits.maxCallBytes} bytes)`,
        });
      }
      const callId = ++nextCallId;
      pending.set(callId, isolateCallId);
      io.call({ t: 'call', id: msg.id, callId, name, argsJson });
    },
    done: (result) => {
      if (!finished) finish(parseResult(result, limits.maxResultBytes));
    },
    log: (code, text) => {
      if (finished || typeof text !== 'string') return;
      if (code === LOG_LIMIT) return finish({ kind: 'limit', message: clip(text, MAX_ERROR_CHARS) });
      const room = limits.maxOutputBytes - outBytes;
      outBytes += text.length + 1;
      if (outBytes <= limits.maxOutputBytes) return void logs.push(text);
      if (room > 0) logs.push(text.slice(0, room));
      finish({ kind: 'output_limit', message: `console output exceeded ${limits.maxOutputBytes} bytes` });
    },
  });

  const wallTimeout = (): Failure => ({
    kind: 'timeout',
    message: `the program ran longer than ${limits.wallMs} ms`,
  });
  const cpuTimeout = (): Failure => ({
    kind: 'timeout',
    message: `the program used more than ${limits.cpuMs} ms of CPU time`,
  });
  const deadline = performance.now() + limits.wallMs;
  const wall = setTimeout(() => finish(wallTimeout()), limits.wallMs);
  const cpuBudgetNs = limits.cpuMs * 1_000_000;
  /** CPU the run used so far, and since the last check() (ns): queued entries by the meter, inline ones measured. */
  let cpuUsedNs = 0;
  let ranNs = 0;
  const spend = (ns: number): void => {
    cpuUsedNs += ns;
    ranNs += ns;
  };
  /**
   * isolated-vm's `cpuTime` at the last sample, and the time entered inline since then (ns): the
   * meter gets the queued part only, as it shares the CPU of the threads other than this one.
   */
  let enteredAt = 0n;
  let enteredInlineNs = 0;
  try {
    enteredAt = slot.isolate.cpuTime; // the prelude's install is not the run's
  } catch {
    // disposed: the first entry fails and says why
  }
  const lostIsolate = (): Failure => ({
    kind: 'memory',
    message: `the program ran out of memory (limit ${limits.memoryMb} MB)`,
  });
  const stalled = (): Failure => ({
    kind: 'stalled',
    message:
      'the program awaits a promise that nothing can settle (no tool call of it is pending, and ' +
      'programs have no timers or other events), so it would never finish',
  });

  const starved = (tookMs: number, cpuNs: number): Failure => ({
    kind: 'timeout',
    message:
      `the machine was too busy for the program: one stretch of it took ${Math.round(tookMs)} ms and ` +
      `got only ${Math.round(cpuNs / 1e6)} ms of CPU time (its CPU budget: ${limits.cpuMs} ms)`,
  });

  /**
   * What an inline entry's throw means, judged by state, never by its message (which the program
   * can write: isolated-vm ends each applySync by throwing a promise the program left rejected
   * without a handler). The isolate is gone: memory. The entry took its whole timeout: the CPU
   * budget if the run has spent it, else the wall clock if that is up, else it was starved. Anything
   * else is the program's own unhandled rejection, which a queued entry drops as well.
   */
  const entryFailed = (tookMs: number, timeoutMs: number, cpuNs: number): Failure | undefined => {
    if (slot.isolate.isDisposed) return lostIsolate();
    if (tookMs < timeoutMs - 1) return undefined;
    if (cpuUsedNs >= cpuBudgetNs) return cpuTimeout();
    return performance.now() >= deadline - 1 ? wallTimeout() : starved(tookMs, cpuNs);
  };
  /** An inline entry's timeout: the rest of the wall clock, or INLINE_WAIT_FACTOR × the CPU left (ms). */
  const entryTimeoutMs = (): number => {
    const cpuLeftMs = (cpuBudgetNs - cpuUsedNs) / 1e6;
    return Math.max(1, Math.ceil(Math.min(deadline - performance.now(), INLINE_WAIT_FACTOR * cpuLeftMs)));
  };
  /**
   * After an entry returned: with no entry in flight, no call pending and no outcome, nothing can
   * resume the program (see the header). Exact, never a guess: a program that waits on anything
   * that can still happen has a call pending or an entry on its way.
   */
  const afterEntry = (): void => {
    if (finished || inEntry || queued > 0 || pending.size > 0) return;
    finish(slot.isolate.isDisposed ? lostIsolate() : stalled());
  };
  const queuedReturned = (): void => {
    queued--;
    afterEntry();
  };
  /** One entry into the isolate, inline or queued. */
  const enter = (ref: ivm.Reference<(...args: never[]) => unknown>, args: unknown[]): void => {
    if (finished) return;
    if (!io.inline()) {
      // Queued: this thread goes on at once and learns that the entry returned from its promise,
      // which settles after every call and log the entry made (isolated-vm hands both to this
      // thread in one queue, in order). It rejects with the program's unhandled rejection (dropped,
      // as inline) or when the isolate is gone (memory, seen here or at the next check).
      try {
        queued++;
        ref
          .apply(undefined, [...args, false] as never[], { arguments: { copy: true } })
          .then(queuedReturned, queuedReturned);
      } catch {
        queued--;
        finish(slot.isolate.isDisposed ? lostIsolate() : { kind: 'crash', message: 'the isolate failed' });
      }
      return;
    }
    const timeoutMs = entryTimeoutMs();
    const startedAt = performance.now();
    const cpuBefore = processCpuUs();
    let threw = false;
    inEntry = true;
    try {
      ref.applySync(undefined, [...args, true] as never[], { arguments: { copy: true }, timeout: timeoutMs });
    } catch {
      threw = true;
    } finally {
      inEntry = false;
      // This run is the worker's only one: the process's CPU during the entry is the entry's.
      const cpuNs = (processCpuUs() - cpuBefore) * 1000;
      const tookMs = performance.now() - startedAt;
      enteredInlineNs += tookMs * 1e6;
      spend(cpuNs);
      const failure = threw ? entryFailed(tookMs, timeoutMs, cpuNs) : undefined;
      if (failure) finish(failure);
      else if (cpuUsedNs > cpuBudgetNs) finish(cpuTimeout());
      close();
    }
    afterEntry();
  };

  const limitsJson = JSON.stringify({
    maxOutputBytes: limits.maxOutputBytes,
    maxCallBytes: limits.maxCallBytes,
    maxResultBytes: limits.maxResultBytes,
    maxCalls: limits.maxCalls,
  });
  return {
    id: msg.id,
    memoryMb: limits.memoryMb,
    inline: msg.inline === true,
    begin: () => enter(slot.run, [msg.src, JSON.stringify(msg.bindings), msg.globalsJson, limitsJson]),
    deliver: (results) => {
      if (finished) return;
      const ids: number[] = [];
      const envelopes: string[] = [];
      for (const [callId, envelope] of results) {
        const isolateCallId = pending.get(callId as number);
        if (isolateCallId === undefined || typeof envelope !== 'string') continue;
        pending.delete(callId as number);
        ids.push(isolateCallId);
        envelopes.push(envelope);
      }
      // One result crosses as a number and a string: nothing to serialise as arrays on the way in.
      if (ids.length === 1) enter(slot.deliver, [ids[0], envelopes[0]]);
      else if (ids.length > 1) enter(slot.deliver, [ids, envelopes]);
    },
    cancel: () => finish({ kind: 'aborted', message: 'the run was cancelled' }),
    sample: () => {
      if (finished) return 0;
      let entered: bigint;
      try {
        if (slot.isolate.isDisposed) throw new Error('disposed');
        entered = slot.isolate.cpuTime;
      } catch {
        finish(lostIsolate());
        return 0;
      }
      const queuedNs = Number(entered - enteredAt) - enteredInlineNs;
      enteredAt = entered;
      enteredInlineNs = 0;
      return Math.max(0, queuedNs);
    },
    charge: (cpuNs) => {
      if (finished) return;
      spend(cpuNs);
      if (cpuUsedNs > cpuBudgetNs) finish(cpuTimeout());
    },
    check: () => {
      if (finished) return undefined;
      if (slot.isolate.isDisposed) {
        finish(lostIsolate());
        return undefined;
      }
      const ran = ranNs;
      ranNs = 0;
      return ran;
    },
    outOfMemory: () => finish(lostIsolate()),
    heapBytes: async () => {
      if (finished || slot.isolate.isDisposed) return undefined;
      try {
        const heap = await slot.isolate.getHeapStatistics();
        return heap.used_heap_size + heap.externally_allocated_size;
      } catch {
        return undefined;
      }
    },
  };
};

/** CPU this process used so far, all its threads, in µs. */
const processCpuUs = (): number => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

const FAILURE_KINDS = new Set(['compile', 'runtime', 'limit']);

const parseResult = (result: unknown, maxResultBytes: number): Settled => {
  if (typeof result !== 'string' || result.length === 0)
    return { kind: 'runtime', message: 'the program produced no result' };
  const tag = result[0];
  if (tag === 'U') return { ok: true, valueJson: undefined };
  if (tag === 'V') {
    if (result.length - 1 > maxResultBytes)
      return { kind: 'limit', message: 'the return value is over the size limit' };
    return { ok: true, valueJson: result.slice(1) };
  }
  try {
    const parsed = JSON.parse(result.slice(1)) as Record<string, unknown>;
    const kind = typeof parsed.kind === 'string' && FAILURE_KINDS.has(parsed.kind) ? parsed.kind : 'runtime';
    const name = typeof parsed.name === 'string' ? parsed.name : 'Error';
    const message = typeof parsed.message === 'string' ? parsed.message : '';
    const stack = typeof parsed.stack === 'string' ? clip(parsed.stack, MAX_STACK_CHARS) : undefined;
    const text = kind === 'limit' ? message : `${name}: ${message}`;
    return {
      kind: kind as Failure['kind'],
      message: clip(text, MAX_ERROR_CHARS),
      ...(stack ? { stack } : {}),
    };
  } catch {
    return { kind: 'runtime', message: 'the program produced an unreadable result' };
  }
};
