// The isolate host's settings, resolved once from IsolateHostOptions when the host is created:
// the limits a run gets by default, the workers' sizes, how many runs a worker holds (as many as
// its memory budget fits, memory.ts), inline entry, and one owner's share of the open workers.
// Invalid settings fail here, not at the first run.
import { runsPerWorker, workerCapacityMb } from './memory.ts';
import { DEFAULT_LIMITS, type IsolateHostOptions, type RunLimits } from './types.ts';

export interface HostConfig {
  readonly defaults: Readonly<RunLimits>;
  readonly workers: number;
  readonly prewarm: number;
  readonly workerHeapMb: number;
  readonly workerRssMb: number;
  readonly killGraceMs: number;
  /** What the runs of one worker may reserve while they wait (memory.ts), in MB. */
  readonly capacityMb: number;
  readonly maxRunsPerWorker: number;
  readonly inline: boolean;
  readonly ownerShare: number;
}

export function hostConfigOf(options: IsolateHostOptions): HostConfig {
  const defaults: RunLimits = Object.freeze({ ...DEFAULT_LIMITS, ...options.limits });
  const workerRssMb = options.workerRssMb ?? 1024;
  const ownerShare = options.ownerShare ?? 0.5;
  if (!(ownerShare > 0 && ownerShare <= 1))
    throw new RangeError(`ownerShare must be in (0, 1], got ${String(options.ownerShare)}`);
  return {
    defaults,
    workers: options.workers ?? 2,
    prewarm: options.prewarm ?? 2,
    workerHeapMb: options.workerHeapMb ?? 256,
    workerRssMb,
    killGraceMs: options.killGraceMs ?? 1000,
    // A worker holds only as many runs as their memory fits in: a program may keep its whole heap
    // while it waits, and the worker's budget has to hold all of them at once.
    capacityMb: workerCapacityMb(workerRssMb, defaults.memoryMb),
    maxRunsPerWorker: options.maxRunsPerWorker ?? Math.min(64, runsPerWorker(workerRssMb, defaults.memoryMb)),
    inline: options.inline ?? true,
    ownerShare,
  };
}
