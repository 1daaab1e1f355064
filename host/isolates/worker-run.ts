// One program run inside a worker process: a pre-warmed (or fresh) isolate slot, the two bridge
// callbacks, and the limits the worker enforces itself (wall clock, CPU time, output, call count and
// sizes). Invariants: a slot serves exactly one run and is disposed when the run finishes, whatever
// the reason; `finish` runs once and always sends exactly one `done`; every string that comes out of
// the isolate is treated as untrusted text and size-checked.
import ivm from 'isolated-vm';
import { LOG_LIMIT, PRELUDE_FILENAME, PRELUDE_SOURCE } from './prelude.ts';
import type { HostToWorker, WorkerOutcome, WorkerToHost } from './protocol.ts';
import { clip, MAX_ERROR_CHARS, MAX_STACK_CHARS } from './protocol.ts';

type RunMessage = Extract<HostToWorker, { t: 'run' }>;
type Failure = Omit<Extract<WorkerOutcome, { ok: false }>, 'ok' | 'logs'> & { ok?: false };
type Settled = { ok: true; valueJson: string | undefined } | Failure;

interface RunHooks {
  call(callId: unknown, name: unknown, argsJson: unknown): void;
  log(code: unknown, text: unknown): void;
}

/** An isolate + context with the prelude installed and nothing of a program yet. */
export interface Slot {
  memoryMb: number;
  isolate: ivm.Isolate;
  start: ivm.Reference<(...args: string[]) => Promise<string>>;
  /** Settles calls inside the isolate: (callIds, envelopeJsons), one entry of the isolate for many. */
  deliver: ivm.Reference<(callIds: number[], envelopes: string[]) => void>;
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
    const call = new ivm.Callback(
      (id: unknown, name: unknown, args: unknown) => hooks?.call(id, name, args),
      { ignored: true },
    );
    const log = new ivm.Callback((code: unknown, text: unknown) => hooks?.log(code, text), { ignored: true });
    const api = (await install.apply(undefined, [call, log], {
      result: { reference: true },
    })) as ivm.Reference<{
      start: unknown;
      deliver: unknown;
    }>;
    const start = (await api.get('start', { reference: true })) as Slot['start'];
    const deliver = (await api.get('deliver', { reference: true })) as Slot['deliver'];
    api.release();
    install.release();
    script.release();
    return {
      memoryMb,
      isolate,
      start,
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

export interface ActiveRun {
  id: number;
  /** Settles the given calls (host call id, envelope); unknown ids and non-strings are ignored. */
  deliver(results: ReadonlyArray<readonly [unknown, unknown]>): void;
  cancel(): void;
  /** Called by the worker's poll: ends the run if the isolate burned its CPU budget or died. */
  check(): void;
}

/** Where a run's messages go: calls are queued for the tick's frame, the outcome leaves at once. */
export interface RunIo {
  call(message: Extract<WorkerToHost, { t: 'call' }>): void;
  done(outcome: WorkerOutcome): void;
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

  const finish = (outcome: Settled) => {
    if (finished) return;
    finished = true;
    clearTimeout(wall);
    pending.clear();
    io.done(outcome.ok === true ? { ...outcome, logs } : { ...outcome, ok: false, logs });
    try {
      if (!slot.isolate.isDisposed) slot.isolate.dispose();
    } catch {
      // already disposed by a memory failure: nothing left to release
    }
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

  const wall = setTimeout(
    () => finish({ kind: 'timeout', message: `the program ran longer than ${limits.wallMs} ms` }),
    limits.wallMs,
  );
  const cpuBudget = BigInt(limits.cpuMs) * 1_000_000n;
  const lostIsolate = (): Failure => ({
    kind: 'memory',
    message: `the program ran out of memory (limit ${limits.memoryMb} MB)`,
  });

  const limitsJson = JSON.stringify({
    maxOutputBytes: limits.maxOutputBytes,
    maxCallBytes: limits.maxCallBytes,
    maxResultBytes: limits.maxResultBytes,
    maxCalls: limits.maxCalls,
  });
  slot.start
    .apply(undefined, [msg.src, JSON.stringify(msg.bindings), msg.globalsJson, limitsJson], {
      arguments: { copy: true },
      result: { promise: true, copy: true },
    })
    .then(
      (result: unknown) => finish(parseResult(result, limits.maxResultBytes)),
      (error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        if (/memory limit|disposed/i.test(message)) return finish(lostIsolate());
        finish({ kind: 'crash', message: `the isolate failed: ${clip(message, 200)}` });
      },
    );

  return {
    id: msg.id,
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
      if (ids.length === 0) return;
      // Fire and forget: nothing comes back, so the isolate's thread never wakes this one for it.
      // A failure here means the isolate is gone; the run's own promise reports why.
      try {
        slot.deliver.applyIgnored(undefined, [ids, envelopes], { arguments: { copy: true } });
      } catch {
        // disposed under us (memory limit): the start promise settles the run
      }
    },
    cancel: () => finish({ kind: 'aborted', message: 'the run was cancelled' }),
    check: () => {
      if (finished) return;
      if (slot.isolate.isDisposed) return finish(lostIsolate());
      let cpu = 0n;
      try {
        cpu = slot.isolate.cpuTime;
      } catch {
        return finish(lostIsolate());
      }
      if (cpu > cpuBudget)
        finish({ kind: 'timeout', message: `the program used more than ${limits.cpuMs} ms of CPU time` });
    },
  };
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
