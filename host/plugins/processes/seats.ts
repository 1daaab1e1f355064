// Placing plugins on their tenant's workers: a seat on a ready worker with room, else a fork when
// the caps allow (quota.ts), else a wait for a leaving worker or out a tenant's backoff, all within
// `readyTimeoutMs`. Placement is bounded per agent and per tenant by the plugin's limits and
// host-wide by `maxWorkers`, of which `reserveWorkers` stay for tenants that have none; a tenant
// that has none on a full host takes an idle worker of the biggest holder's (reclaim.ts).
// Invariants: a claim counts against its agent and tenant from place() until release() (once); a
// worker's `reservedMb` is the sum of the claims seated on it (`seatOn`, `unseat`).
import { isSandboxError, SandboxError } from '../../errors.ts';
import { waitingReserveMb, workerCapacityMb } from '../../isolates/memory.ts';
import { checkCaps, checkFork, type PlacementCaps, sharedCaps } from '../quota.ts';
import { reclaim } from './reclaim.ts';
import {
  before,
  type Claim,
  forgetIfDone,
  type ProcessesState,
  type Slot,
  shuttingDown,
  type Tenant,
  tenantOf,
} from './state.ts';
import type { PlacementRequest, PluginPlacement } from './types.ts';
import { fork, idleCheck } from './workers.ts';

const capacityMb = (state: ProcessesState, memoryMb: number) => workerCapacityMb(state.rssMb, memoryMb);
/** The tenant's worker with room for `memoryMb`: a ready one first, then the least reserved. */
function roomy(state: ProcessesState, tenant: Tenant, memoryMb: number): Slot | undefined {
  let best: Slot | undefined;
  for (const slot of tenant.slots) {
    if (
      slot.gone !== undefined ||
      slot.worker.reservedMb + waitingReserveMb(memoryMb) > capacityMb(state, memoryMb)
    )
      continue;
    if (
      best === undefined ||
      (slot.worker.ready && !best.worker.ready) ||
      (slot.worker.ready === best.worker.ready && slot.worker.reservedMb < best.worker.reservedMb)
    )
      best = slot;
  }
  return best;
}

function seatOn(slot: Slot, claim: Claim): void {
  clearTimeout(slot.idle);
  slot.idle = undefined;
  slot.seated++;
  slot.placedAt = performance.now();
  slot.worker.reservedMb += waitingReserveMb(claim.memoryMb);
  claim.slot = slot;
  claim.worker = slot.worker;
}
export function unseat(state: ProcessesState, claim: Claim): void {
  const slot = claim.slot;
  if (slot === undefined) return;
  claim.slot = undefined;
  slot.seated--;
  slot.worker.reservedMb = Math.max(0, slot.worker.reservedMb - waitingReserveMb(claim.memoryMb));
  if (slot.seated === 0 && slot.worker.ready) idleCheck(state, slot);
}

/** Only a tenant refused for want of any worker on the host, and not waiting out a backoff, reclaims one. */
const mayReclaim = (tenant: Tenant, error: unknown) =>
  isSandboxError(error) && error.code === 'ISOLATE_UNAVAILABLE' && tenant.notBefore <= performance.now();

/** Seats the claim on a ready worker of its tenant, forking one when none has room. */
async function seat(state: ProcessesState, tenant: Tenant, claim: Claim, caps: PlacementCaps): Promise<void> {
  const deadline = performance.now() + state.readyTimeoutMs;
  const { slots, maxWorkers, reserveWorkers } = state;
  for (;;) {
    if (state.closing) throw shuttingDown();
    const slot = roomy(state, tenant, claim.memoryMb);
    if (slot !== undefined) {
      seatOn(slot, claim);
      if (slot.worker.ready) return;
      const ready = await before(state, slot.process.ready, deadline);
      if (state.closing) throw shuttingDown();
      if (ready === true && slot.worker.ready) return;
      unseat(state, claim);
      if (ready === 'late')
        throw new SandboxError(
          'ISOLATE_UNAVAILABLE',
          'No plugin worker got ready in time; try again shortly.',
        );
      continue; // it died starting: the backoff below decides when the next one forks
    }
    try {
      checkFork(tenant.slots.size, { running: slots.size, maxWorkers, reserveWorkers }, caps);
    } catch (error) {
      // A worker on its way out (reaped) frees its place in a moment: wait for it, then look again.
      // A tenant that has none, on a host with none left, takes an idle one of the biggest holder's.
      const leaving =
        [...slots.values()].find((other) => other.gone !== undefined) ??
        (mayReclaim(tenant, error) ? reclaim(state, tenant) : undefined);
      if (leaving === undefined || (await before(state, leaving.gone as Promise<void>, deadline)) === 'late')
        throw error;
      continue;
    }
    const wait = tenant.notBefore - performance.now();
    if (wait <= 0) {
      fork(state, tenant);
      continue;
    }
    if (performance.now() + wait > deadline)
      throw new SandboxError(
        'ISOLATE_UNAVAILABLE',
        `This tenant's plugin worker processes keep failing; try again in ${Math.ceil(wait / 1000)} s.`,
      );
    await before(state, new Promise<never>(() => {}), performance.now() + wait);
  }
}

/** Seats a plugin of `memoryMb` on a ready worker of its tenant, forking one if needed. */
export async function place(
  state: ProcessesState,
  { owner, memoryMb, caps }: PlacementRequest,
): Promise<PluginPlacement> {
  if (state.closing) throw shuttingDown();
  const tenant = tenantOf(state, owner.tenantId);
  checkCaps(tenant.placements, owner, memoryMb, sharedCaps(caps, state.options.tenantShare));
  const claim: Claim = {
    owner: { tenantId: owner.tenantId, agentId: owner.agentId },
    memoryMb,
    worker: undefined,
    slot: undefined,
  };
  tenant.placements.add(claim);
  try {
    await seat(state, tenant, claim, caps);
  } catch (error) {
    tenant.placements.delete(claim);
    unseat(state, claim);
    forgetIfDone(state, tenant);
    throw error;
  }
  return claim as PluginPlacement;
}

/** Gives back what place() took; a second call is a no-op. */
export function release(state: ProcessesState, placement: PluginPlacement): void {
  const claim = placement as Claim;
  const tenant = state.tenants.get(claim.owner.tenantId);
  if (tenant === undefined || !tenant.placements.delete(claim)) return;
  unseat(state, claim);
  forgetIfDone(state, tenant);
}
