// One run as the host tracks it from admission to its outcome, the state the host's parts share,
// and the one way a run ends (finishRun).
// Invariants: a run settles exactly once; finishRun gives back everything it held (its timers, its
// abort listener, its worker's slot and memory reservation, its owner's count, its place in the
// queue, its calls still waiting for a pending slot) and aborts the signal its pending calls got.
import type { HostConfig } from './host-config.ts';
import { waitingReserveMb } from './memory.ts';
import type { Supervisor, WorkerHandle } from './supervisor.ts';
import type { FailureKind, JsonValue, RunLimits, RunOutcome, RunRequest } from './types.ts';

/** How a run ended, before the host adds its stats. */
export type Settled =
  | { ok: true; value: JsonValue | undefined; logs: string[] }
  | { ok: false; kind: FailureKind; message: string; logs: string[] };

/** A call that waits for one of its run's pending calls to settle (RunLimits.maxInFlight). */
export interface WaitingCall {
  name: string;
  args: JsonValue;
  callId: number;
}

export interface HostRun {
  id: number;
  request: RunRequest;
  /** request.bindings as a set: the only names a call may carry. */
  bindings: ReadonlySet<string>;
  limits: RunLimits;
  src: string;
  map: string;
  globalsJson: string;
  startedAt: number;
  worker?: WorkerHandle;
  /** The worker is dedicated to this run, which may enter its isolate inline (IsolateHostOptions.inline). */
  inline: boolean;
  /** Aborted when the run ends or is cancelled: the signal every onCall of the run gets. */
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
  waitingCalls: WaitingCall[];
  timers: NodeJS.Timeout[];
  detach: () => void;
  resolve: (outcome: RunOutcome) => void;
  settled: boolean;
  /** Counted in HostState.byOwner (dispatched, with an owner) until it settles. */
  counted: boolean;
}

/** What the host's parts share. */
export interface HostState {
  readonly config: HostConfig;
  readonly supervisor: Supervisor;
  /** Admitted, unsettled runs by id (queued or dispatched). */
  readonly runs: Map<number, HostRun>;
  /** Admitted runs not dispatched yet, in arrival order. */
  readonly queue: HostRun[];
  /** Dispatched, unsettled runs per owner. */
  readonly byOwner: Map<string, number>;
  nextId: number;
  closed: boolean;
  /** A run ended: its worker's slot may take a queued run (on the next turn of the loop). */
  readonly freed: () => void;
}

/** The host's own failures; a worker's report becomes a Settled in outcome.ts. */
export const failed = (kind: FailureKind, message: string): Settled => ({
  ok: false,
  kind,
  message,
  logs: [],
});

/** Why a settled run's calls still in flight end: what `abort()` gives, an AbortError DOMException. */
const RUN_ENDED = new DOMException('This operation was aborted', 'AbortError');

export function finishRun(state: HostState, run: HostRun, outcome: Settled): void {
  if (run.settled) return;
  run.settled = true;
  for (const timer of run.timers) clearTimeout(timer);
  run.detach();
  // Only onCall ever gets the signal: a run that made no call has no listener to tell, and an
  // abort builds an event and, without a reason, a DOMException (~50 µs of a trivial run's
  // main-thread time): the reason is the one AbortError an abort() would make, made once.
  if (run.callCount > 0) run.calls.abort(RUN_ENDED);
  run.waitingCalls.length = 0;
  state.runs.delete(run.id);
  const { worker } = run;
  if (worker?.runs.delete(run.id)) worker.reservedMb -= waitingReserveMb(run.limits.memoryMb);
  if (worker?.inlineRun === run.id) worker.inlineRun = undefined;
  if (worker?.retiring && worker.runs.size === 0) state.supervisor.send(worker, { t: 'shutdown' });
  if (run.counted) uncount(state.byOwner, run.request.owner as string);
  const index = state.queue.indexOf(run);
  if (index >= 0) state.queue.splice(index, 1);
  const stats = {
    calls: run.callCount,
    maxInFlight: run.maxPending,
    wallMs: performance.now() - run.startedAt,
    inline: run.inline,
  };
  run.resolve({ ...outcome, stats } as RunOutcome);
  state.freed();
}

function uncount(byOwner: Map<string, number>, owner: string): void {
  const left = (byOwner.get(owner) ?? 1) - 1;
  if (left <= 0) byOwner.delete(owner);
  else byOwner.set(owner, left);
}
