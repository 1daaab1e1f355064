// The plugin worker processes, seen from the API process. Every tenant's plugins run on worker
// processes of that tenant's own (worker-process.ts), forked when one of its plugins is placed and
// none of its workers has room, and ended once they have held no plugin for `idleMs`: a V8 crash,
// a memory bomb or a full worker of one tenant touches no other tenant's plugin. Plugin isolates
// never live in the API process: isolated-vm has known ways to abort a whole process
// (ARCHITECTURE.md, "Code mode and isolates"). This module wires the parts, each in its own module
// under processes/: state.ts holds the tenants, workers and placements; seats.ts places and
// releases plugins within the caps (quota.ts); workers.ts forks, reaps and kills the workers;
// reclaim.ts takes an idle worker for a tenant that has none when the host has no worker left.
// Invariant: the host never runs more than `maxWorkers` plugin worker processes, stopping ones
// included.

import { place, release } from './processes/seats.ts';
import { createProcessesState } from './processes/state.ts';
import type {
  PlacementRequest,
  PluginPlacement,
  PluginProcessesOptions,
  WorkerHandlers,
} from './processes/types.ts';
import { stop, watchRss } from './processes/workers.ts';
import type { HostToPluginWorker } from './protocol.ts';
import type { PluginWorker } from './worker-process.ts';

export type {
  PlacementRequest,
  PluginPlacement,
  PluginProcessEvent,
  PluginProcessesOptions,
  WorkerHandlers,
} from './processes/types.ts';
export type { PlacementCaps } from './quota.ts';
export type { PluginWorker } from './worker-process.ts';

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
  listen(handlers: WorkerHandlers): void;
  /** Pids of the ready workers, of one tenant or of all. */
  pids(tenantId?: string): number[];
  close(): Promise<void>;
}

export const createPluginProcesses = (options: PluginProcessesOptions = {}): PluginProcesses => {
  const state = createProcessesState(options);
  const { slots } = state;
  const rssWatch = watchRss(state);
  return {
    place: (request) => place(state, request),
    release: (placement) => release(state, placement),
    post(worker, message) {
      const slot = slots.get(worker.id);
      if (slot === undefined || slot.worker !== worker) return false;
      slot.usedAt = performance.now();
      return slot.process.post(message);
    },
    listen(next) {
      state.handlers = next;
    },
    pids: (tenantId) =>
      [...slots.values()]
        .filter((slot) => slot.worker.ready && (tenantId === undefined || slot.tenant.id === tenantId))
        .map((slot) => slot.worker.pid),
    async close() {
      state.closing = true;
      clearInterval(rssWatch);
      for (const wake of [...state.sleepers]) wake();
      await Promise.all([...slots.values()].map((slot) => stop(state, slot)));
    },
  };
};
