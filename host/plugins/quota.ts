// The caps placement enforces on one tenant's plugins (processes.ts), as decisions over what it
// holds: per agent and per tenant, the running plugins and the heap limits they add up to; and the
// tenant's worker processes within the host's, of which `reserveWorkers` stay for tenants that have
// none. A refusal names the tenant's own cap: LIMIT_EXCEEDED with `data.limit` (the PluginLimits
// field) and `data.max`, never another tenant's; only a host whose every worker is another tenant's
// answers ISOLATE_UNAVAILABLE. With replicas on one database, the tenant-wide running and heap caps
// are this replica's part of them (sharedCaps): at most cap + N - 1 across N live replicas.
import { SandboxError } from '../errors.ts';
import type { PluginOwner } from '../store/plugins-core.ts';
import type { PluginLimits } from './types.ts';

/** The bounds of one tenant's plugins that placement enforces (a plugin's limits carry its tenant's). */
export type PlacementCaps = Pick<
  PluginLimits,
  | 'maxRunningPerAgent'
  | 'maxRunningPerTenant'
  | 'maxMemoryMbPerAgent'
  | 'maxMemoryMbPerTenant'
  | 'maxWorkersPerTenant'
>;

/** The caps with the tenant-wide ones cut to this replica's part of them (replicas; see PluginProcessesOptions.tenantShare). */
export function sharedCaps(caps: PlacementCaps, share: ((cap: number) => number) | undefined): PlacementCaps {
  if (share === undefined) return caps;
  return {
    ...caps,
    maxRunningPerTenant: share(caps.maxRunningPerTenant),
    maxMemoryMbPerTenant: share(caps.maxMemoryMbPerTenant),
  };
}

const refuse = (limit: keyof PlacementCaps, max: number, message: string) =>
  new SandboxError('LIMIT_EXCEEDED', message, { data: { limit, max } });

/** Throws when one more plugin of `memoryMb` for `owner` would pass a cap of its agent or tenant. */
export function checkCaps(
  held: Iterable<{ readonly owner: PluginOwner; readonly memoryMb: number }>,
  owner: PluginOwner,
  memoryMb: number,
  caps: PlacementCaps,
): void {
  let agentCount = 0;
  let agentMb = 0;
  let tenantCount = 0;
  let tenantMb = 0;
  for (const placement of held) {
    tenantCount++;
    tenantMb += placement.memoryMb;
    if (placement.owner.agentId !== owner.agentId) continue;
    agentCount++;
    agentMb += placement.memoryMb;
  }
  if (agentCount >= caps.maxRunningPerAgent)
    throw refuse(
      'maxRunningPerAgent',
      caps.maxRunningPerAgent,
      `This agent runs ${agentCount} plugins, its most (maxRunningPerAgent ${caps.maxRunningPerAgent}); stop one (cordis_stop) before starting another.`,
    );
  if (tenantCount >= caps.maxRunningPerTenant)
    throw refuse(
      'maxRunningPerTenant',
      caps.maxRunningPerTenant,
      `This tenant's agents run ${tenantCount} plugins, its most (maxRunningPerTenant ${caps.maxRunningPerTenant}); stop one before starting another.`,
    );
  if (agentMb + memoryMb > caps.maxMemoryMbPerAgent)
    throw refuse(
      'maxMemoryMbPerAgent',
      caps.maxMemoryMbPerAgent,
      `This agent's running plugins may hold ${agentMb} MB of heap; ${memoryMb} MB more is over its most (maxMemoryMbPerAgent ${caps.maxMemoryMbPerAgent}); stop one first.`,
    );
  if (tenantMb + memoryMb > caps.maxMemoryMbPerTenant)
    throw refuse(
      'maxMemoryMbPerTenant',
      caps.maxMemoryMbPerTenant,
      `This tenant's running plugins may hold ${tenantMb} MB of heap; ${memoryMb} MB more is over its most (maxMemoryMbPerTenant ${caps.maxMemoryMbPerTenant}); stop one first.`,
    );
}

export interface HostWorkers {
  /** Plugin worker processes alive now, every tenant's (stopping ones included). */
  running: number;
  maxWorkers: number;
  reserveWorkers: number;
}

/**
 * Throws unless a tenant that has `have` workers may fork another now: its own cap (never above
 * the host's less the reserve), then the reserve, then the host's room.
 */
export function checkFork(have: number, host: HostWorkers, caps: PlacementCaps): void {
  const most = Math.max(1, Math.min(caps.maxWorkersPerTenant, host.maxWorkers - host.reserveWorkers));
  const full = (max: number, why: string) =>
    refuse(
      'maxWorkersPerTenant',
      max,
      `This tenant's plugins fill the ${have} plugin worker process(es) it may have now (${why}); stop one of its plugins first.`,
    );
  if (have >= most) throw full(most, `maxWorkersPerTenant ${most}`);
  const free = host.maxWorkers - host.running;
  if (have > 0 && free - 1 < host.reserveWorkers)
    throw full(have, `the host keeps its last ${host.reserveWorkers} for tenants that have none`);
  if (free < 1)
    throw new SandboxError(
      'ISOLATE_UNAVAILABLE',
      `This host runs as many plugin worker processes as it may (${host.maxWorkers}), each another tenant's; try again later.`,
    );
}
