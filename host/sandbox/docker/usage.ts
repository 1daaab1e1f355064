// What an agent's container uses now (SandboxProvider.usage): its workspace's disk from the
// workspace store, and, when asked, memory and CPU from one `docker stats` sample bounded by a
// timeout. Read-only: never starts, adopts or renames a container; a container that is gone reads
// as none (undefined).
import type Docker from 'dockerode';
import type { SandboxUsage, SandboxUsageOptions, UsedOf } from '../types.ts';
import { fromDocker, isNotFound } from './errors.ts';
import { type WorkspaceMount, type WorkspaceStore, workspaceOf } from './workspaces.ts';

/** The part of `docker stats` (API 1.41+, one sample with its previous one) read here. */
interface StatsSample {
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number> };
  cpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number; online_cpus?: number };
  precpu_stats?: { cpu_usage?: { total_usage?: number }; system_cpu_usage?: number };
}

const DEFAULT_STATS_TIMEOUT_MS = 3000;

/** Memory without the page cache (as `docker stats` shows it), and CPU in % of one CPU. */
export const fromStats = (s: StatsSample): Pick<SandboxUsage, 'memory' | 'cpuPercent'> => {
  const out: Pick<SandboxUsage, 'memory' | 'cpuPercent'> = {};
  const m = s.memory_stats;
  if (m?.usage !== undefined && m.limit !== undefined) {
    const cache = m.stats?.inactive_file ?? m.stats?.total_inactive_file ?? m.stats?.cache ?? 0;
    out.memory = { usedBytes: Math.max(0, m.usage - cache), limitBytes: m.limit };
  }
  // Without the previous sample the difference would be the CPU since boot: no figure then.
  const before = s.precpu_stats;
  if (!before?.system_cpu_usage) return out;
  const cpu = (s.cpu_stats?.cpu_usage?.total_usage ?? 0) - (before.cpu_usage?.total_usage ?? 0);
  const system = (s.cpu_stats?.system_cpu_usage ?? 0) - before.system_cpu_usage;
  if (system > 0 && cpu >= 0)
    out.cpuPercent = Math.round((cpu / system) * (s.cpu_stats?.online_cpus ?? 1) * 10_000) / 100;
  return out;
};

/** One stats sample, or undefined after `ms` (the sample is left to finish on its own). */
const statsWithin = async (container: Docker.Container, ms: number): Promise<StatsSample | undefined> => {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  const sample = container.stats({ stream: false }).then(
    (s) => s as StatsSample,
    () => undefined,
  );
  try {
    return await Promise.race([sample, late]);
  } finally {
    clearTimeout(timer);
  }
};

/**
 * Used blocks of the workspace's file system against the size it was made with (what the agent
 * asked for as diskMb), not the file system's own total, which leaves out its metadata.
 */
const diskOf = async (workspaces: WorkspaceStore, mount: WorkspaceMount): Promise<UsedOf | undefined> => {
  const [used, size] = await Promise.all([
    workspaces.usage(mount).catch(() => undefined),
    workspaces.limitOf(mount).catch(() => undefined),
  ]);
  return used === undefined ? undefined : { usedBytes: used.usedBytes, limitBytes: size ?? used.limitBytes };
};

export const containerUsage = async (
  container: Docker.Container,
  workspaces: WorkspaceStore,
  agentId: string,
  options: SandboxUsageOptions = {},
): Promise<SandboxUsage | undefined> => {
  let info: Docker.ContainerInspectInfo;
  try {
    info = await container.inspect();
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw fromDocker(e, 'Reading the sandbox usage', { agentId });
  }
  const mount = workspaceOf(info);
  const running = info.State?.Running === true;
  const [disk, stats] = await Promise.all([
    mount === undefined ? undefined : diskOf(workspaces, mount),
    options.stats === true && running
      ? statsWithin(container, options.statsTimeoutMs ?? DEFAULT_STATS_TIMEOUT_MS)
      : undefined,
  ]);
  return { ...(disk === undefined ? {} : { disk }), ...(stats === undefined ? {} : fromStats(stats)) };
};
