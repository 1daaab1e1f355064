// The plugin worker processes' state in the API process: the settings, the tenants with their
// workers (slots) and placements (claims), the workers by id. The other parts (workers.ts, seats.ts)
// are functions over this state.
// Invariants: a placement counts against its agent and tenant from place() until release() (once,
// whatever became of its worker); a worker's `reservedMb` is the sum of the placements seated on
// it; a tenant is forgotten once it has nothing left and waits out no backoff (`forgetIfDone`).
import { SandboxError } from '../../errors.ts';
import type { PluginOwner } from '../../store/plugins-core.ts';
import type { PluginWorker, WorkerProcess } from '../worker-process.ts';
import type { PluginProcessEvent, PluginProcessesOptions, WorkerHandlers } from './types.ts';

export interface Slot {
  process: WorkerProcess;
  worker: PluginWorker;
  tenant: Tenant;
  /** Placements seated here. */
  seated: number;
  idle: ReturnType<typeof setTimeout> | undefined;
  /** Set once it is told to exit (reaped, reclaimed, or the service closes): it takes no placement, its exit is no failure. */
  gone: Promise<void> | undefined;
  /** When something was last posted to it (performance.now()): the least recently used is reclaimed first. */
  usedAt: number;
  /** When a placement was last seated here: until something is posted after it, its plugin is starting. */
  placedAt: number;
  /** Taken for another tenant (reclaim.ts); its exit is no reap either. */
  reclaimed: boolean;
}

export interface Tenant {
  id: string;
  /** Its worker processes, starting, ready or stopping. */
  slots: Set<Slot>;
  placements: Set<Claim>;
  /** Workers in a row that died young, and when the next may be forked (performance.now()). */
  failures: number;
  notBefore: number;
}

export interface Claim {
  readonly owner: PluginOwner;
  readonly memoryMb: number;
  worker: PluginWorker | undefined;
  slot: Slot | undefined;
}

export interface ProcessesState {
  readonly options: PluginProcessesOptions;
  readonly maxWorkers: number;
  readonly reserveWorkers: number;
  readonly idleMs: number;
  readonly reclaimAfterMs: number;
  readonly rssMb: number;
  readonly heapMb: number;
  readonly killGraceMs: number;
  readonly readyTimeoutMs: number;
  readonly tenants: Map<string, Tenant>;
  readonly slots: Map<number, Slot>;
  /** Placements asleep in a tenant's backoff, woken on close. */
  readonly sleepers: Set<() => void>;
  handlers: WorkerHandlers;
  nextId: number;
  closing: boolean;
}

export function createProcessesState(options: PluginProcessesOptions): ProcessesState {
  const maxWorkers = options.maxWorkers ?? 8;
  return {
    options,
    maxWorkers,
    reserveWorkers: Math.min(
      Math.max(0, maxWorkers - 1),
      options.reserveWorkers ?? Math.max(1, Math.floor(maxWorkers / 4)),
    ),
    idleMs: options.idleMs ?? 30_000,
    reclaimAfterMs: options.reclaimAfterMs ?? options.idleMs ?? 30_000,
    rssMb: options.rssMb ?? 1024,
    heapMb: options.heapMb ?? 256,
    killGraceMs: options.killGraceMs ?? 1000,
    readyTimeoutMs: options.readyTimeoutMs ?? 10_000,
    tenants: new Map(),
    slots: new Map(),
    sleepers: new Set(),
    // Until someone listens, every worker counts as busy: none is reclaimed from under a plugin.
    handlers: {
      message: () => undefined,
      exit: () => undefined,
      busy: () => true,
      reclaimed: () => undefined,
    },
    nextId: 0,
    closing: false,
  };
}

export function event(
  state: ProcessesState,
  type: PluginProcessEvent['type'],
  slot: Slot,
  detail: string,
): void {
  state.options.onEvent?.({
    type,
    worker: slot.worker.id,
    tenantId: slot.tenant.id,
    pid: slot.worker.pid,
    detail,
  });
}

export function tenantOf(state: ProcessesState, id: string): Tenant {
  let tenant = state.tenants.get(id);
  if (tenant === undefined) {
    tenant = { id, slots: new Set(), placements: new Set(), failures: 0, notBefore: 0 };
    state.tenants.set(id, tenant);
  }
  return tenant;
}

/** A tenant with nothing left is forgotten, unless it still waits out a backoff. */
export function forgetIfDone(state: ProcessesState, tenant: Tenant): void {
  if (tenant.slots.size > 0 || tenant.placements.size > 0 || tenant.notBefore > performance.now()) return;
  state.tenants.delete(tenant.id);
}

export const shuttingDown = () => new SandboxError('SHUTTING_DOWN', 'The plugin runtime is shutting down.');

/** `promise`'s value, or 'late' at the deadline (or when the service closes). */
export function before<T>(state: ProcessesState, promise: Promise<T>, deadline: number): Promise<T | 'late'> {
  const { sleepers } = state;
  return new Promise((resolve) => {
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
}
