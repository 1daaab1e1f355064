// Taking a worker for a tenant that has none when the host runs every worker it may. Each worker
// holds one tenant's plugins and a running plugin holds its worker for as long as it runs, so as
// many tenants as `maxWorkers`, each with one idle plugin, refused every further tenant until a
// worker was reaped, which never came (a denial of service across tenants where accounts are
// cheap). The newcomer takes the least recently used worker of the tenant holding the most, among
// those whose plugins have no callback in flight (the listener's `busy`) and were posted nothing
// for `reclaimAfterMs` (by default as long as an empty worker lives: tenants that use their
// plugins do not take each other's in turn); its plugins end now with a failure that says why
// (the runtime's `reclaimed`), and the worker is told to exit.
// Invariants: a busy, starting or stopping worker is never taken, nor one of the newcomer's own,
// nor one used within `reclaimAfterMs`; the worker taken still counts against `maxWorkers` until it
// exited (the newcomer waits for that).
import { event, type ProcessesState, type Slot, type Tenant } from './state.ts';
import { stop } from './workers.ts';

const held = (tenant: Tenant) => [...tenant.slots].filter((slot) => slot.gone === undefined).length;

/** The worker to take for `newcomer`: see the header. */
function idlest(state: ProcessesState, newcomer: Tenant): Slot | undefined {
  let pick: Slot | undefined;
  let most = 0;
  const usedBefore = performance.now() - state.reclaimAfterMs;
  for (const slot of state.slots.values()) {
    if (slot.tenant === newcomer || slot.gone !== undefined || !slot.worker.ready) continue;
    if (slot.usedAt > usedBefore) continue;
    // A placement seated and not yet loaded has no instance the listener knows of yet.
    if (slot.placedAt >= slot.usedAt || state.handlers.busy(slot.worker)) continue;
    const count = held(slot.tenant);
    if (count > most || (count === most && pick !== undefined && slot.usedAt < pick.usedAt)) {
      most = count;
      pick = slot;
    }
  }
  return pick;
}

/** Takes an idle worker of another tenant for `newcomer`; undefined when every worker is busy. */
export function reclaim(state: ProcessesState, newcomer: Tenant): Slot | undefined {
  const slot = idlest(state, newcomer);
  if (slot === undefined) return undefined;
  slot.reclaimed = true;
  event(
    state,
    'reclaimed',
    slot,
    `idle; taken for tenant ${newcomer.id} (the host runs as many plugin workers as it may, ${state.maxWorkers})`,
  );
  // Told to exit first: the placements its plugins give back as they end cannot schedule a reap.
  void stop(state, slot);
  state.handlers.reclaimed(slot.worker);
  return slot;
}
