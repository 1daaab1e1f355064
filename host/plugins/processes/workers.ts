// The plugin worker processes themselves: forked for one tenant (worker-process.ts), ended once they
// have held no plugin for `idleMs`, killed past their resident cap, and what their exit means.
// A tenant whose workers keep dying young waits longer before its next (fork.ts's nextRestart).
// Invariants: a worker is in `slots` from fork until it exited; its exit is told to the listener
// only when it had been ready; a worker told to exit (`gone`) takes no placement and its exit is
// no failure.
import { nextRestart } from '../../isolates/fork.ts';
import { startWorkerProcess } from '../worker-process.ts';
import { event, forgetIfDone, type ProcessesState, type Slot, type Tenant } from './state.ts';

export function fork(state: ProcessesState, tenant: Tenant): void {
  const id = ++state.nextId;
  const child = startWorkerProcess({
    id,
    tenantId: tenant.id,
    heapMb: state.heapMb,
    rssMb: state.rssMb,
    onMessage: (message) => state.handlers.message(child.worker, message),
    onExit: (detail, wasReady) => exited(state, slot, detail, wasReady),
  });
  const slot: Slot = {
    process: child,
    worker: child.worker,
    tenant,
    seated: 0,
    idle: undefined,
    gone: undefined,
    usedAt: performance.now(),
    placedAt: Number.NEGATIVE_INFINITY,
    reclaimed: false,
  };
  tenant.slots.add(slot);
  state.slots.set(id, slot);
  event(state, 'started', slot, `for tenant ${tenant.id}`);
  // Whoever forked it may have given up by the time it is ready.
  void child.ready.then((ok) => ok && idleCheck(state, slot));
}

/** Asks the worker to exit; it takes no placement from now on. */
export function stop(state: ProcessesState, slot: Slot): Promise<void> {
  clearTimeout(slot.idle);
  slot.gone ??= slot.process.stop(state.killGraceMs);
  return slot.gone;
}

function exited(state: ProcessesState, slot: Slot, detail: string, wasReady: boolean): void {
  const { tenant } = slot;
  state.slots.delete(slot.worker.id);
  tenant.slots.delete(slot);
  clearTimeout(slot.idle);
  if (slot.gone !== undefined) {
    if (!state.closing && !slot.reclaimed)
      event(state, 'reaped', slot, `held no plugin for ${state.idleMs} ms`);
  } else {
    event(state, 'exited', slot, detail);
    const restart = nextRestart(tenant.failures, performance.now() - slot.process.startedAt);
    tenant.failures = restart.failures;
    tenant.notBefore = performance.now() + restart.delayMs;
  }
  if (wasReady) state.handlers.exit(slot.worker);
  forgetIfDone(state, tenant);
}

/** A ready worker that holds no plugin ends after idleMs, unless one is seated meanwhile. */
export function idleCheck(state: ProcessesState, slot: Slot): void {
  clearTimeout(slot.idle);
  slot.idle = undefined;
  if (slot.seated > 0 || slot.gone !== undefined || state.closing || !state.slots.has(slot.worker.id)) return;
  slot.idle = setTimeout(() => {
    if (slot.seated === 0) void stop(state, slot);
  }, state.idleMs);
  slot.idle.unref();
}

/** Isolate memory limits are guidelines (some builtins ignore them): the process cap is real. */
export function watchRss(state: ProcessesState): ReturnType<typeof setInterval> {
  const { rssMb } = state;
  const rssWatch = setInterval(() => {
    for (const slot of state.slots.values()) {
      // Unknown (no /proc, or the process just exited) counts as within the cap.
      if ((slot.process.residentBytes() ?? 0) <= rssMb * 1024 * 1024) continue;
      event(state, 'killed', slot, `resident memory over ${rssMb} MB`);
      slot.process.kill();
    }
  }, 100);
  rssWatch.unref();
  return rssWatch;
}
