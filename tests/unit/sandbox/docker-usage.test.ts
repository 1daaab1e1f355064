// Reading a container's memory and CPU from one `docker stats` sample, as `docker stats` shows them.
import { describe, expect, it } from 'vitest';
import { fromStats } from '../../../host/sandbox/docker/usage.ts';

const MiB = 1024 * 1024;

describe('fromStats', () => {
  it('leaves the page cache out of memory (cgroup v2 inactive_file, v1 total_inactive_file)', () => {
    const v2 = { memory_stats: { usage: 100 * MiB, limit: 256 * MiB, stats: { inactive_file: 40 * MiB } } };
    expect(fromStats(v2).memory).toEqual({ usedBytes: 60 * MiB, limitBytes: 256 * MiB });
    const v1 = {
      memory_stats: { usage: 50 * MiB, limit: 512 * MiB, stats: { total_inactive_file: 10 * MiB } },
    };
    expect(fromStats(v1).memory).toEqual({ usedBytes: 40 * MiB, limitBytes: 512 * MiB });
  });

  it('gives CPU in % of one CPU over the sample, and nothing without a previous sample', () => {
    const sample = {
      cpu_stats: {
        cpu_usage: { total_usage: 1_500_000_000 },
        system_cpu_usage: 20_000_000_000,
        online_cpus: 2,
      },
      precpu_stats: { cpu_usage: { total_usage: 1_000_000_000 }, system_cpu_usage: 18_000_000_000 },
    };
    // 0.5 s of CPU over 2 s of both CPUs' time (1 s of wall time): half of one CPU.
    expect(fromStats(sample).cpuPercent).toBe(50);
    expect(fromStats({ cpu_stats: sample.cpu_stats }).cpuPercent).toBeUndefined();
    expect(fromStats({})).toEqual({});
  });
});
