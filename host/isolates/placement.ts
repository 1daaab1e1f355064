// Which queued run goes to which worker, and when. The queue is served in order, skipping the runs
// of owners at their share, so one tenant's queue of long-computing programs never keeps another
// tenant's run waiting (fairness), and an owner's second and later runs leave a quarter of the open
// slots free for owners that have none: before, two owners at their halves filled every slot and a
// third tenant's first program waited out theirs. A run goes to a worker that holds no other
// owner's runs where there is one (apart), else to the worker that can start it soonest
// (preferred), among the ready ones with a free slot and room in their memory budget (fits); it may
// have an idle worker to itself (inline) while another worker stays open to everybody else.
// Invariants: a dispatched run is counted against its worker (runs, reservedMb, slots) and its
// owner until finishRun gives that back; a worker dedicated to an inline run takes nothing else;
// every dispatched run's deadline has a host-side backstop that kills a worker gone silent.
import { reserveFor } from '../shares.ts';
import { failed, finishRun, type HostRun, type HostState } from './host-run.ts';
import { waitingReserveMb } from './memory.ts';
import type { HostToWorker } from './protocol.ts';
import type { WorkerHandle } from './supervisor.ts';

/** Dispatches queued runs while some worker can take them. */
export function pump(state: HostState): void {
  const { queue, supervisor, config } = state;
  // Owners found at their share stay there for this pump (a dispatch only adds runs and takes
  // workers out of the open ones): their other queued runs are skipped without asking again.
  const atShare = new Set<string>();
  for (let i = 0; i < queue.length; ) {
    const next = queue[i] as HostRun;
    const owner = next.request.owner;
    // An owner at its share waits; the runs of others behind it go first.
    if (owner !== undefined && (atShare.has(owner) || !underShare(state, next))) {
      atShare.add(owner);
      i++;
      continue;
    }
    const candidates = supervisor
      .handles()
      .filter(
        (h) =>
          h.ready &&
          !h.retiring &&
          h.runs.size < config.maxRunsPerWorker &&
          h.inlineRun === undefined &&
          fits(state, h, next),
      );
    if (candidates.length === 0) return;
    const handle = candidates.reduce((a, b) => (better(state, owner, b, a) ? b : a));
    queue.splice(i, 1);
    dispatch(state, next, handle);
  }
}

/**
 * Whether the run's owner may have one more run now: under its share of the open workers' runs,
 * and for a second or later run, with the reserve still free after it.
 */
function underShare(state: HostState, run: HostRun): boolean {
  const owner = run.request.owner;
  if (owner === undefined) return true;
  const { maxRunsPerWorker, ownerShare } = state.config;
  const open = state.supervisor.handles().filter((h) => h.inlineRun === undefined);
  const slots = open.length * maxRunsPerWorker;
  const share = Math.max(1, Math.ceil(slots * ownerShare));
  const held = state.byOwner.get(owner) ?? 0;
  if (held >= share) return false;
  if (held === 0) return true;
  // Kept for owners with no run.
  const reserve = reserveFor(slots);
  const taken = open.reduce((sum, h) => sum + h.runs.size, 0);
  return slots - taken - 1 >= reserve;
}

/** Whether the worker's memory budget holds the run too, with every run on it keeping its whole heap. */
function fits(state: HostState, handle: WorkerHandle, run: HostRun): boolean {
  return (
    handle.runs.size === 0 ||
    handle.reservedMb + waitingReserveMb(run.limits.memoryMb) <= state.config.capacityMb
  );
}

/**
 * Owners apart: a worker's memory is governed as a whole (memory.ts: what the process holds, not
 * whose heap grew, since a running isolate's heap cannot be read), and a worker past its resident
 * cap is killed with every run in it. A run of one owner in a worker with another owner's runs can
 * therefore be ended for the other's allocation. So a worker holding only this owner's runs (or
 * none) beats one that holds somebody else's, whatever else; owners share a worker only when every
 * worker that can take the run holds others' runs.
 */
function better(state: HostState, owner: string | undefined, a: WorkerHandle, b: WorkerHandle): boolean {
  const aMixes = holdsOthers(state, a, owner);
  if (aMixes !== holdsOthers(state, b, owner)) return !aMixes;
  return preferred(a, b);
}

/** Whether the worker holds a run of an owner other than `owner` (runs without one count as others). */
function holdsOthers(state: HostState, handle: WorkerHandle, owner: string | undefined): boolean {
  for (const id of handle.runs) {
    const other = state.runs.get(id)?.request.owner;
    if (other === undefined || other !== owner) return true;
  }
  return false;
}

/**
 * Routing: a worker that can start a run at once (an untouched isolate ready, no isolate being
 * created on its loop) beats one that cannot; then fewer runs in flight; then more ready isolates;
 * between two workers still creating isolates, the one that began first (it frees its loop sooner).
 */
function preferred(a: WorkerHandle, b: WorkerHandle): boolean {
  const aNow = a.slots > 0 && !a.warming;
  const bNow = b.slots > 0 && !b.warming;
  if (aNow !== bNow) return aNow;
  if (a.runs.size !== b.runs.size) return a.runs.size < b.runs.size;
  if (a.slots > 0 !== b.slots > 0) return a.slots > 0;
  if (a.warming && b.warming) return a.warmingSince < b.warmingSince;
  return a.slots > b.slots;
}

function dispatch(state: HostState, run: HostRun, handle: WorkerHandle): void {
  const { supervisor, config } = state;
  // Inline only on an idle worker, and only while another worker (running, or starting up) stays
  // open to everybody else: an inline entry occupies its worker's thread while the program computes.
  run.inline =
    config.inline &&
    run.request.inline !== false &&
    handle.runs.size === 0 &&
    supervisor.handles().some((h) => h !== handle && h.inlineRun === undefined && !h.retiring);
  if (run.inline) {
    handle.inlineRun = run.id;
    handle.aliveAt = performance.now();
  }
  run.worker = handle;
  const owner = run.request.owner;
  if (owner !== undefined) {
    run.counted = true;
    state.byOwner.set(owner, (state.byOwner.get(owner) ?? 0) + 1);
  }
  handle.runs.add(run.id);
  handle.reservedMb += waitingReserveMb(run.limits.memoryMb);
  handle.slots = Math.max(0, handle.slots - 1);
  if (!supervisor.send(handle, runMessage(run))) {
    finishRun(state, run, failed('crash', 'the isolate worker could not take the run'));
    return;
  }
  // Backstop: the worker ends the run itself at wallMs; if it has not answered by then plus the
  // grace period it is stuck (uninterruptible V8 work, a hung dispose) and is killed.
  const { wallMs } = run.limits;
  run.timers.push(
    setTimeout(() => {
      finishRun(state, run, failed('timeout', `the program ran longer than ${wallMs} ms`));
      supervisor.kill(handle, 'run deadline passed without an answer');
    }, wallMs + config.killGraceMs),
  );
}

/** What the worker is told: the program, its bindings and globals, and the limits it enforces itself. */
function runMessage(run: HostRun): HostToWorker {
  const { limits } = run;
  return {
    t: 'run',
    id: run.id,
    src: run.src,
    bindings: [...run.bindings],
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
  };
}
