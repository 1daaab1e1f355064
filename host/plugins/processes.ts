// The plugin worker processes, seen from the API process. Every tenant's plugins run on worker
// processes of that tenant's own (worker-process.ts), forked when one of its plugins is placed and
// none of its workers has room, and ended once they have held no plugin for `idleMs`: a V8 crash,
// a memory bomb or a full worker of one tenant touches no other tenant's plugin. Placement is
// bounded per agent and per tenant by the plugin's limits and host-wide by `maxWorkers`, of which
// `reserveWorkers` stay for tenants that have none, so no tenant can take the host's plugin
// capacity from the others (the decisions and their errors: quota.ts). A tenant whose workers keep
// dying young waits longer before its next (fork.ts's nextRestart). Plugin isolates never live in
// the API process: isolated-vm has known ways to abort a whole process (ARCHITECTURE.md, "Code
// mode and isolates").
// Invariants: a placement counts against its agent and tenant from place() until release() (once,
// whatever became of its worker); a worker's `reservedMb` is the sum of the placements seated on
// it; the host never runs more than `maxWorkers` plugin worker processes, stopping ones included.
import { SandboxError } from '../errors.ts';
import { nextRestart } from '../isolates/fork.ts';
import { waitingReserveMb, workerCapacityMb } from '../isolates/memory.ts';
import type { PluginOwner } from '../store/plugins-core.ts';
import type { HostToPluginWorker, PluginWorkerToHost } from './protocol.ts';
import { checkCaps, checkFork, type PlacementCaps } from './quota.ts';
import { type PluginWorker, startWorkerProcess, type WorkerProcess } from './worker-process.ts';

export type { PlacementCaps } from './quota.ts';
export type { PluginWorker } from './worker-process.ts';

export interface PlacementRequest {
  owner: PluginOwner;
  /** The heap limit of the plugin's isolate, in MB. */
  memoryMb: number;
  caps: PlacementCaps;
}

/** One plugin isolate's seat on a worker of its tenant, held until release(). */
export interface PluginPlacement {
  readonly owner: PluginOwner;
  readonly memoryMb: number;
  readonly worker: PluginWorker;
}

export interface PluginProcessEvent {
  /** started: forked; exited: died (a crash, a kill); killed: over its resident cap; reaped: ended idle. */
  type: 'started' | 'exited' | 'killed' | 'reaped';
  worker: number;
  tenantId: string;
  pid: number;
  detail: string;
}

export interface PluginProcessesOptions {
  /** Plugin worker processes on this host, all tenants together. Default 8. */
  maxWorkers?: number;
  /**
   * Workers kept for tenants that have none: a tenant forks a second or later worker only while
   * this many more stay free. Default a quarter of maxWorkers, at least 1.
   */
  reserveWorkers?: number;
  /** How long a worker that holds no plugin lives on, in ms. Default 30 000. */
  idleMs?: number;
  /** `--max-old-space-size` of a worker (its own heap, not the isolates'). Default 256. */
  heapMb?: number;
  /** Resident set past which a worker is killed; its plugins are governed to stay below. Default 1024. */
  rssMb?: number;
  /** Time a worker gets to exit when told to, before SIGKILL. Default 1000. */
  killGraceMs?: number;
  /** How long place() waits for a worker to be ready. Default 10 000. */
  readyTimeoutMs?: number;
  /** Diagnostics (starts, exits, kills, stderr tails); never shown to a model. */
  onEvent?: (event: PluginProcessEvent) => void;
}

export interface PluginProcesses {
  /**
   * Seats a plugin of `memoryMb` on a ready worker of its tenant, forking one if needed.
   * LIMIT_EXCEEDED past one of the tenant's or agent's caps; ISOLATE_UNAVAILABLE when the
   * host has no worker left for it or none got ready; SHUTTING_DOWN once closing.
   */
  place(request: PlacementRequest): Promise<PluginPlacement>;
  /** Gives back what place() took; a second call is a no-op. */
  release(placement: PluginPlacement): void;
  /** Queue for the frame that leaves at the end of this tick; false when the worker is gone. */
  post(worker: PluginWorker, message: HostToPluginWorker): boolean;
  /** Messages of every worker, and its exit (after which it never speaks again). */
  listen(handlers: {
    message(worker: PluginWorker, message: PluginWorkerToHost): void;
    exit(worker: PluginWorker): void;
  }): void;
  /** Pids of the ready workers, of one tenant or of all. */
  pids(tenantId?: string): number[];
  close(): Promise<void>;
}

interface Slot {
  process: WorkerProcess;
  worker: PluginWorker;
  tenant: Tenant;
  /** Placements seated here. */
  seated: number;
  idle: ReturnType<typeof setTimeout> | undefined;
  /** Set once it is told to exit (reaped, or the service closes): it takes no placement, its exit is no failure. */
  gone: Promise<void> | undefined;
}

interface Tenant {
  id: string;
  /** Its worker processes, starting, ready or stopping. */
  slots: Set<Slot>;
  placements: Set<Claim>;
  /** Workers in a row that died young, and when the next may be forked (performance.now()). */
  failures: number;
  notBefore: number;
}

interface Claim {
  readonly owner: PluginOwner;
  readonly memoryMb: number;
  worker: PluginWorker | undefined;
  slot: Slot | undefined;
}

export const createPluginProcesses = (options: PluginProcessesOptions = {}): PluginProcesses => {
  const maxWorkers = options.maxWorkers ?? 8;
  const reserveWorkers = Math.min(
    Math.max(0, maxWorkers - 1),
    options.reserveWorkers ?? Math.max(1, Math.floor(maxWorkers / 4)),
  );
  const idleMs = options.idleMs ?? 30_000;
  const rssMb = options.rssMb ?? 1024;
  const heapMb = options.heapMb ?? 256;
  const killGraceMs = options.killGraceMs ?? 1000;
  const readyTimeoutMs = options.readyTimeoutMs ?? 10_000;
  const tenants = new Map<string, Tenant>();
  const slots = new Map<number, Slot>();
  /** Placements asleep in a tenant's backoff, woken on close. */
  const sleepers = new Set<() => void>();
  let handlers: Parameters<PluginProcesses['listen']>[0] = {
    message: () => undefined,
    exit: () => undefined,
  };
  let nextId = 0;
  let closing = false;

  const event = (type: PluginProcessEvent['type'], slot: Slot, detail: string) =>
    options.onEvent?.({
      type,
      worker: slot.worker.id,
      tenantId: slot.tenant.id,
      pid: slot.worker.pid,
      detail,
    });

  function tenantOf(id: string): Tenant {
    let tenant = tenants.get(id);
    if (tenant === undefined) {
      tenant = { id, slots: new Set(), placements: new Set(), failures: 0, notBefore: 0 };
      tenants.set(id, tenant);
    }
    return tenant;
  }
  /** A tenant with nothing left is forgotten, unless it still waits out a backoff. */
  function forgetIfDone(tenant: Tenant): void {
    if (tenant.slots.size > 0 || tenant.placements.size > 0 || tenant.notBefore > performance.now()) return;
    tenants.delete(tenant.id);
  }

  function fork(tenant: Tenant): void {
    const id = ++nextId;
    const child = startWorkerProcess({
      id,
      tenantId: tenant.id,
      heapMb,
      rssMb,
      onMessage: (message) => handlers.message(child.worker, message),
      onExit: (detail, wasReady) => exited(slot, detail, wasReady),
    });
    const slot: Slot = {
      process: child,
      worker: child.worker,
      tenant,
      seated: 0,
      idle: undefined,
      gone: undefined,
    };
    tenant.slots.add(slot);
    slots.set(id, slot);
    event('started', slot, `for tenant ${tenant.id}`);
    // Whoever forked it may have given up by the time it is ready.
    void child.ready.then((ok) => ok && idleCheck(slot));
  }

  /** Asks the worker to exit; it takes no placement from now on. */
  function stop(slot: Slot): Promise<void> {
    clearTimeout(slot.idle);
    slot.gone ??= slot.process.stop(killGraceMs);
    return slot.gone;
  }

  function exited(slot: Slot, detail: string, wasReady: boolean): void {
    const { tenant } = slot;
    slots.delete(slot.worker.id);
    tenant.slots.delete(slot);
    clearTimeout(slot.idle);
    if (slot.gone !== undefined) {
      if (!closing) event('reaped', slot, `held no plugin for ${idleMs} ms`);
    } else {
      event('exited', slot, detail);
      const restart = nextRestart(tenant.failures, performance.now() - slot.process.startedAt);
      tenant.failures = restart.failures;
      tenant.notBefore = performance.now() + restart.delayMs;
    }
    if (wasReady) handlers.exit(slot.worker);
    forgetIfDone(tenant);
  }

  /** A ready worker that holds no plugin ends after idleMs, unless one is seated meanwhile. */
  function idleCheck(slot: Slot): void {
    clearTimeout(slot.idle);
    slot.idle = undefined;
    if (slot.seated > 0 || slot.gone !== undefined || closing || !slots.has(slot.worker.id)) return;
    slot.idle = setTimeout(() => {
      if (slot.seated === 0) void stop(slot);
    }, idleMs);
    slot.idle.unref();
  }

  const capacityMb = (memoryMb: number) => workerCapacityMb(rssMb, memoryMb);
  /** The tenant's worker with room for `memoryMb`: a ready one first, then the least reserved. */
  function roomy(tenant: Tenant, memoryMb: number): Slot | undefined {
    let best: Slot | undefined;
    for (const slot of tenant.slots) {
      if (
        slot.gone !== undefined ||
        slot.worker.reservedMb + waitingReserveMb(memoryMb) > capacityMb(memoryMb)
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
    slot.worker.reservedMb += waitingReserveMb(claim.memoryMb);
    claim.slot = slot;
    claim.worker = slot.worker;
  }
  function unseat(claim: Claim): void {
    const slot = claim.slot;
    if (slot === undefined) return;
    claim.slot = undefined;
    slot.seated--;
    slot.worker.reservedMb = Math.max(0, slot.worker.reservedMb - waitingReserveMb(claim.memoryMb));
    if (slot.seated === 0 && slot.worker.ready) idleCheck(slot);
  }

  const shuttingDown = () => new SandboxError('SHUTTING_DOWN', 'The plugin runtime is shutting down.');
  /** `promise`'s value, or 'late' at the deadline (or when the service closes). */
  const before = <T>(promise: Promise<T>, deadline: number): Promise<T | 'late'> =>
    new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        sleepers.delete(wake);
        resolve('late');
      };
      const timer = setTimeout(wake, Math.max(0, deadline - performance.now()));
      sleepers.add(wake);
      void promise.then((value) => {
        clearTimeout(timer);
        sleepers.delete(wake);
        resolve(value);
      });
    });

  /** Seats the claim on a ready worker of its tenant, forking one when none has room. */
  async function seat(tenant: Tenant, claim: Claim, caps: PlacementCaps): Promise<void> {
    const deadline = performance.now() + readyTimeoutMs;
    for (;;) {
      if (closing) throw shuttingDown();
      const slot = roomy(tenant, claim.memoryMb);
      if (slot !== undefined) {
        seatOn(slot, claim);
        if (slot.worker.ready) return;
        const ready = await before(slot.process.ready, deadline);
        if (closing) throw shuttingDown();
        if (ready === true && slot.worker.ready) return;
        unseat(claim);
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
        const leaving = [...slots.values()].find((other) => other.gone !== undefined);
        if (leaving === undefined || (await before(leaving.gone as Promise<void>, deadline)) === 'late')
          throw error;
        continue;
      }
      const wait = tenant.notBefore - performance.now();
      if (wait <= 0) {
        fork(tenant);
        continue;
      }
      if (performance.now() + wait > deadline)
        throw new SandboxError(
          'ISOLATE_UNAVAILABLE',
          `This tenant's plugin worker processes keep failing; try again in ${Math.ceil(wait / 1000)} s.`,
        );
      await before(new Promise<never>(() => {}), performance.now() + wait);
    }
  }

  // Isolate memory limits are guidelines (some builtins ignore them): the process cap is real.
  const rssWatch = setInterval(() => {
    for (const slot of slots.values()) {
      // Unknown (no /proc, or the process just exited) counts as within the cap.
      if ((slot.process.residentBytes() ?? 0) <= rssMb * 1024 * 1024) continue;
      event('killed', slot, `resident memory over ${rssMb} MB`);
      slot.process.kill();
    }
  }, 100);
  rssWatch.unref();

  return {
    async place({ owner, memoryMb, caps }) {
      if (closing) throw shuttingDown();
      const tenant = tenantOf(owner.tenantId);
      checkCaps(tenant.placements, owner, memoryMb, caps);
      const claim: Claim = {
        owner: { tenantId: owner.tenantId, agentId: owner.agentId },
        memoryMb,
        worker: undefined,
        slot: undefined,
      };
      tenant.placements.add(claim);
      try {
        await seat(tenant, claim, caps);
      } catch (error) {
        tenant.placements.delete(claim);
        unseat(claim);
        forgetIfDone(tenant);
        throw error;
      }
      return claim as PluginPlacement;
    },
    release(placement) {
      const claim = placement as Claim;
      const tenant = tenants.get(claim.owner.tenantId);
      if (tenant === undefined || !tenant.placements.delete(claim)) return;
      unseat(claim);
      forgetIfDone(tenant);
    },
    post(worker, message) {
      const slot = slots.get(worker.id);
      return slot !== undefined && slot.worker === worker && slot.process.post(message);
    },
    listen(next) {
      handlers = next;
    },
    pids: (tenantId) =>
      [...slots.values()]
        .filter((slot) => slot.worker.ready && (tenantId === undefined || slot.tenant.id === tenantId))
        .map((slot) => slot.worker.pid),
    async close() {
      closing = true;
      clearInterval(rssWatch);
      for (const wake of [...sleepers]) wake();
      await Promise.all([...slots.values()].map(stop));
    },
  };
};
