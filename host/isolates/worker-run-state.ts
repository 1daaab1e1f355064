// A run's state inside a worker (worker-run.ts wires it) and how it ends. One RunState per run,
// passed to the named functions of worker-entry.ts (entering the isolate) and worker-bridge.ts (the
// program's calls, logs and result). Invariants: `finish` runs once and always leads to exactly one
// `done`; a run that ends inside an inline entry (a limit hit in a callback) is reported, and its
// isolate disposed, only when the entry has returned (`close`): never from inside the isolate's own
// callback, and never while this thread is still busy with it (the host would hand this worker a
// new run that then waits).
import type { HostToWorker, WorkerOutcome, WorkerToHost } from './protocol.ts';
import type { Slot } from './worker-slot.ts';

export type RunMessage = Extract<HostToWorker, { t: 'run' }>;
export type Failure = Omit<Extract<WorkerOutcome, { ok: false }>, 'ok' | 'logs'> & { ok?: false };
export type Settled = { ok: true; valueJson: string | undefined } | Failure;
type Limits = RunMessage['limits'];

/** Where a run's messages go: calls are queued for the tick's frame, the outcome leaves at once. */
export interface RunIo {
  call(message: Extract<WorkerToHost, { t: 'call' }>): void;
  done(outcome: WorkerOutcome): void;
  /** True when this run may enter its isolate on the worker's own thread (it is the only run). */
  inline(): boolean;
}

export interface RunState {
  slot: Slot;
  msg: RunMessage;
  io: RunIo;
  limits: Limits;
  bindings: Set<string>;
  logs: string[];
  /** host call id -> the isolate's own call id */
  pending: Map<number, number>;
  outBytes: number;
  calls: number;
  nextCallId: number;
  finished: boolean;
  /** True while an inline entry runs on this thread (see the header). */
  inEntry: boolean;
  /** Queued entries not returned yet (their microtasks included). */
  queued: number;
  /** A queued entry returned (worker-entry.ts): one function per run, never one per entry. */
  queuedReturned: () => void;
  report: WorkerOutcome | undefined;
  wall: ReturnType<typeof setTimeout> | undefined;
  deadline: number;
  cpuBudgetNs: number;
  /** CPU the run used so far, and since the last check() (ns): queued entries by the meter, inline ones measured. */
  cpuUsedNs: number;
  ranNs: number;
  /**
   * isolated-vm's `cpuTime` at the last sample, and the time entered inline since then (ns): the
   * meter gets the queued part only, as it shares the CPU of the threads other than this one.
   */
  enteredAt: bigint;
  enteredInlineNs: number;
}

export function close(s: RunState): void {
  if (s.report === undefined) return;
  s.io.done(s.report);
  s.report = undefined;
  try {
    if (!s.slot.isolate.isDisposed) s.slot.isolate.dispose();
  } catch {
    // already disposed by a memory failure: nothing left to release
  }
}

export function finish(s: RunState, outcome: Settled): void {
  if (s.finished) return;
  s.finished = true;
  clearTimeout(s.wall);
  s.pending.clear();
  s.report = outcome.ok === true ? { ...outcome, logs: s.logs } : { ...outcome, ok: false, logs: s.logs };
  if (!s.inEntry) close(s);
}

export function spend(s: RunState, ns: number): void {
  s.cpuUsedNs += ns;
  s.ranNs += ns;
}

export const wallTimeout = (limits: Limits): Failure => ({
  kind: 'timeout',
  message: `the program ran longer than ${limits.wallMs} ms`,
});
export const cpuTimeout = (limits: Limits): Failure => ({
  kind: 'timeout',
  message: `the program used more than ${limits.cpuMs} ms of CPU time`,
});
export const lostIsolate = (limits: Limits): Failure => ({
  kind: 'memory',
  message: `the program ran out of memory (limit ${limits.memoryMb} MB)`,
});
/** Ended with other programs when their worker ran out of memory: the memory may be theirs. */
export const memoryBeside = (limits: Limits): Failure => ({
  kind: 'memory',
  message:
    `the program was ended when its isolate worker ran out of memory while it and other programs ` +
    `ran; it may not have used that memory itself (its limit: ${limits.memoryMb} MB): run it again`,
});
export const stalled = (): Failure => ({
  kind: 'stalled',
  message:
    'the program awaits a promise that nothing can settle (no tool call of it is pending, and ' +
    'programs have no timers or other events), so it would never finish',
});
export const starved = (limits: Limits, tookMs: number, cpuNs: number): Failure => ({
  kind: 'timeout',
  message:
    `the machine was too busy for the program: one stretch of it took ${Math.round(tookMs)} ms and ` +
    `got only ${Math.round(cpuNs / 1e6)} ms of CPU time (its CPU budget: ${limits.cpuMs} ms)`,
});
