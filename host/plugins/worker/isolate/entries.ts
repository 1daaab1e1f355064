// The entries into a plugin isolate: the prelude installed in a fresh context (prelude.ts), and every
// entry (start, a tool's execute, a settled call, an event, stop) queued on isolated-vm's thread
// pool, so a plugin's loop or memory never holds the worker's thread or another plugin's isolate.
// An entry is bounded by the CPU it really uses (meter.ts) and, as a backstop, by a generous wall
// clock (isolated-vm's timeout, which counts waiting too).
// Invariants: nothing is entered once the plugin ended; `inFlight` counts the entries sent and not
// yet returned; entering allocates nothing of its own beyond the arguments (the handlers are bound
// once, in `install`).
import ivm from 'isolated-vm';
import { PRELUDE_FILENAME, PRELUDE_SOURCE } from '../../prelude.ts';
import { clip } from '../../protocol.ts';
import { onOut } from './messages.ts';
import { dispose, type Entry, end, type IsolateState, memoryMessage, unloaded } from './state.ts';

/** What isolated-vm's timeout rejects an entry with. */
const TIMED_OUT = 'Script execution timed out.';

export interface Entries {
  readonly state: IsolateState;
  readonly refs: { start: Entry; execute: Entry; deliver: Entry; event: Entry; stop: Entry };
  readonly returned: () => void;
  readonly rejected: (error: unknown) => void;
}

/** Runs the prelude in a new context and takes its entries; disposes the isolate when that fails. */
export async function install(state: IsolateState): Promise<Entries> {
  const { isolate } = state;
  try {
    const context = await isolate.createContext();
    const script = await isolate.compileScript(PRELUDE_SOURCE, { filename: PRELUDE_FILENAME });
    const install = await script.run(context, { reference: true });
    const out = new ivm.Callback((type: unknown, json: unknown) => onOut(state, type, json), {
      ignored: true,
    });
    const api = (await install.apply(undefined, [out], { result: { reference: true } })) as ivm.Reference<
      Record<string, unknown>
    >;
    const get = async (name: string) => (await api.get(name, { reference: true })) as Entry;
    const refs = {
      start: await get('start'),
      execute: await get('execute'),
      deliver: await get('deliver'),
      event: await get('event'),
      stop: await get('stop'),
    };
    return {
      state,
      refs,
      returned: () => returned(state),
      rejected: (error) => rejected(state, error),
    };
  } catch (error) {
    dispose(state);
    throw error;
  }
}

/** An entry returned: what it was entered since the last sample is not the next one's. */
function returned(state: IsolateState): void {
  state.inFlight--;
  state.entryCpu = 0;
  try {
    state.enteredByDone = Number(state.isolate.cpuTime - state.enteredAt);
  } catch {
    // disposed: the next sample ends the plugin
  }
}

/**
 * An entry rejected, judged by state: the isolate is gone (memory), isolated-vm's timeout fired
 * (the entry's wall-clock bound). Anything else is the plugin's own unhandled rejection, which
 * isolated-vm reports through the entry: logged, as Cordis reports a listener's error.
 */
function rejected(state: IsolateState, error: unknown): void {
  const { limits } = state;
  returned(state);
  if (state.isolate.isDisposed) return void end(state, 'memory', memoryMessage(limits));
  const message = error instanceof Error ? error.message : String(error);
  if (message === TIMED_OUT)
    return void end(
      state,
      'timeout',
      `a callback of the plugin held its isolate longer than its wall-clock bound of ${limits.callbackWallMs} ms`,
    );
  if (!state.ended)
    state.send({
      t: 'log',
      id: state.id,
      level: 'error',
      text: clip(`unhandled rejection: ${message}`, limits.maxLogChars),
    });
}

export function enter(entries: Entries, ref: Entry, args: unknown[]): void {
  const { state } = entries;
  if (state.ended) return;
  state.inFlight++;
  ref
    .apply(undefined, args as never[], { arguments: { copy: true }, timeout: state.limits.callbackWallMs })
    .then(entries.returned, entries.rejected);
}

/** Settled calls of the plugin's own, those still in flight, in one entry. */
export function deliver(entries: Entries, results: ReadonlyArray<readonly [number, string]>): void {
  const ids: number[] = [];
  const envelopes: string[] = [];
  for (const [callId, envelope] of results) {
    if (!entries.state.calls.delete(callId)) continue;
    ids.push(callId);
    envelopes.push(envelope);
  }
  if (ids.length > 0) enter(entries, entries.refs.deliver, [ids, envelopes]);
}

/** Disposes the plugin's scope, then the isolate; `unloaded` follows (also when it already ended). */
export function unload(entries: Entries): void {
  const { state } = entries;
  if (state.ended) return void state.send({ t: 'unloaded', id: state.id });
  if (state.unloading) return;
  state.unloading = true;
  enter(entries, entries.refs.stop, []);
  // A stop that never answers (its disposers loop until the timeout, or the isolate dies
  // meanwhile) still ends in `unloaded`: through end(), or this deadline.
  setTimeout(() => unloaded(state), state.limits.cpuMsPerCallback * 2 + 1000).unref();
}
