// How the core takes a backend answer that may come now or later (event-log-port.ts, Answer) while
// its own steps stay synchronous: an operation (an append, a page, a payload, usage) runs as one
// synchronous function; where it needs an answer the backend gives as a promise, answer() starts
// that load and throws Loading, and settle() runs the operation again once the load is done, with
// the answers loaded so far at hand (an operation over many items gathers their loads first: one
// round for all). A synchronous backend (libsql, memory) never throws Loading,
// so its operations run once, in the caller's call, with no await.
// Invariants: an operation mutates nothing before its last load (each one is all or nothing, as
// append already is), so running it again is safe; the answers of one operation are its own
// (s.answers is set only while that operation runs, synchronously) and die with it.
import type { Answer } from './event-log-port.ts';

/** What an operation's answers live in (LogState has it: event-log-state.ts). */
export interface Answering {
  /** The backend answers loaded so far by the running operation; undefined between operations. */
  answers: Map<string, unknown> | undefined;
}

/** Thrown by answer(): the operation waits for `loaded` and runs again. */
export class Loading {
  readonly loaded: Promise<void>;
  constructor(loaded: Promise<void>) {
    this.loaded = loaded;
  }
}

export function isPromise<T>(value: Answer<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

/** Where a load still under way is kept in an operation's answers (beside its key's answer). */
const PENDING = '\u0001';

/**
 * The backend's answer `key` for the running operation: now when `load` answers synchronously (or
 * an earlier run of this operation loaded it); otherwise its load starts and Loading is thrown.
 * A key asked again while its load is under way waits for that load (an append of 1000 events of
 * one session loads its tenant, seq and usage once, not once per event).
 */
export function answer<T>(s: Answering, key: string, load: () => Answer<T>): T {
  const loaded = s.answers;
  if (loaded?.has(key)) return loaded.get(key) as T;
  const pending = loaded?.get(PENDING + key) as Promise<void> | undefined;
  if (pending !== undefined) throw new Loading(pending);
  const value = load();
  if (!isPromise(value)) return value;
  const answers = loaded ?? new Map<string, unknown>();
  s.answers = answers;
  const done = value.then((v) => {
    answers.set(key, v);
  });
  answers.set(PENDING + key, done);
  throw new Loading(done);
}

/**
 * Runs `step`, keeping the load it needs in `loads` (then undefined) instead of stopping there: an
 * operation over many items gathers their loads and waits for them together (loaded()), one round
 * for all, instead of one round trip per item.
 */
export function gather<T>(loads: Promise<void>[], step: () => T): T | undefined {
  try {
    return step();
  } catch (error) {
    if (!(error instanceof Loading)) throw error;
    loads.push(error.loaded);
    return undefined;
  }
}

/** Throws one Loading for every load gathered; nothing when there is none. */
export function loaded(loads: Promise<void>[]): void {
  if (loads.length > 0) throw new Loading(Promise.all(loads).then(() => undefined));
}

/** Runs `run` (an operation, see the header): its value now, or a promise when it had to load. */
export function settle<T>(s: Answering, run: () => T, answers?: Map<string, unknown>): T | Promise<T> {
  const outer = s.answers;
  s.answers = answers;
  try {
    return run();
  } catch (error) {
    if (!(error instanceof Loading)) throw error;
    const kept = s.answers;
    return error.loaded.then(() => settle(s, run, kept));
  } finally {
    s.answers = outer;
  }
}

/** `settle` as a promise: already resolved (or rejected) when the backend answered synchronously. */
export function settled<T>(s: Answering, run: () => T): Promise<T> {
  try {
    const value = settle(s, run);
    return isPromise(value) ? value : Promise.resolve(value);
  } catch (error) {
    return Promise.reject(error);
  }
}
