// An isolate slot of a worker (worker-run.ts runs one program in it): a pre-warmed (or fresh)
// isolate + context with the prelude installed and nothing of a program yet, and its bridge
// callbacks. Invariants: a slot serves exactly one run (attach() points the callbacks at it); a
// slot whose set-up failed is disposed before the error leaves. Each callback exists twice: queued
// (from the pool thread the isolate must not wait for this thread: ignored) and inline (this thread
// is the one running the isolate: a plain Callback runs at once).
// Cost: a worker makes a slot after every run, ~2.2 ms of CPU of which parsing and compiling the
// prelude was ~0.4 ms; the prelude is compiled from V8's code cache, made by this process's first
// slot from the prelude's own source (never from anything a program gave), ~0.1 ms.
import ivm from 'isolated-vm';
import { PRELUDE_FILENAME, PRELUDE_SOURCE } from './prelude.ts';

export interface RunHooks {
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

/** The prelude's V8 code cache, once a slot produced it; dropped if V8 ever rejects it. */
let preludeCache: ivm.ExternalCopy<ArrayBuffer> | undefined;

/** What compileScript's Script carries at run time beside its declared type (isolated-vm's README). */
type CachedScript = ivm.Script & ivm.CachedDataResult & { cachedDataRejected?: boolean };

const compilePrelude = async (isolate: ivm.Isolate): Promise<ivm.Script> => {
  const cache = preludeCache;
  const script = (await isolate.compileScript(PRELUDE_SOURCE, {
    filename: PRELUDE_FILENAME,
    ...(cache === undefined ? { produceCachedData: true } : { cachedData: cache }),
  })) as CachedScript;
  if (cache === undefined) preludeCache = script.cachedData;
  else if (script.cachedDataRejected === true && preludeCache === cache) preludeCache = undefined;
  return script;
};

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
    const script = await compilePrelude(isolate);
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
