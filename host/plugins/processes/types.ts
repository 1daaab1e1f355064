// The plugin worker processes' vocabulary: what a placement asks for and holds, the options, the
// diagnostics events and the listener of worker messages. Types only.
import type { PluginOwner } from '../../store/plugins-core.ts';
import type { PluginWorkerToHost } from '../protocol.ts';
import type { PlacementCaps } from '../quota.ts';
import type { PluginWorker } from '../worker-process.ts';

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
  /**
   * started: forked; exited: died (a crash, a kill); killed: over its resident cap; reaped: ended
   * idle; reclaimed: taken, idle, for a tenant that had none when the host had no worker left.
   */
  type: 'started' | 'exited' | 'killed' | 'reaped' | 'reclaimed';
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
  /**
   * How long nothing must have been posted to a worker before a tenant that has none may take it
   * (reclaim.ts), in ms. Default idleMs: no worker of a tenant using its plugins is ever taken.
   */
  reclaimAfterMs?: number;
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
  /**
   * Replicas on one database: this replica's part of a tenant-wide cap (maxRunningPerTenant,
   * maxMemoryMbPerTenant), ceil(cap / live replicas) (store/replica-share.ts). Default: the whole
   * cap. Per-agent caps need none (an agent's plugins run on its family's one owner), nor do
   * workers (maxWorkersPerTenant bounds a tenant within this host's own worker processes).
   */
  tenantShare?: (cap: number) => number;
}

/** Messages of every worker, and its exit (after which it never speaks again). */
export interface WorkerHandlers {
  message(worker: PluginWorker, message: PluginWorkerToHost): void;
  exit(worker: PluginWorker): void;
  /** True while a plugin on the worker has a callback in flight (or is starting): it is never reclaimed. */
  busy(worker: PluginWorker): boolean;
  /** The worker is taken for another tenant (and told to exit): its plugins end now, with a clear failure. */
  reclaimed(worker: PluginWorker): void;
}
