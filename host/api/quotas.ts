// The operator's per-tenant quotas where a request makes something they bound (TenantQuotas,
// host/store/tenants-port.ts): POST /v1/agents past the tenant's `agents` quota, or with a
// workspace that would take its workspaces past its `diskMb` quota (one made `fromSnapshot` counts
// the snapshot's size, which it gets whatever the default), answers LIMIT_EXCEEDED (data: limit
// "agents" or "diskMb", max), with nothing made; a child with a workspace of its own is held to
// `diskMb` the same way (childWorkspaceQuota). Invariant: in one process the count and the create
// of one tenant's agents run one at a time, the API's and children's in one queue per store
// (tenantTurn), so concurrent creates cannot pass a quota together; on PostgreSQL each turn is
// also the tenant's turn across the replicas (a per-tenant advisory lock, TenantStore.quotaTurn),
// so replicas cannot either.
import type { MiddlewareHandler } from 'hono';
import type { AgentService } from '../agents/service.ts';
import type { Agent } from '../agents/types.ts';
import { SandboxError } from '../errors.ts';
import type { TenantStore } from '../store/index.ts';
import type { TenantQuotas } from '../store/tenants-port.ts';
import type { ApiEnv } from './env.ts';

/** What a tenant uses of what its quotas bound. */
export interface QuotaUsage {
  /** Live top-level agents. */
  agents: number;
  /** MiB of workspace its live agents hold: top-level agents and children with a workspace of their own. */
  diskMb: number;
}

/** The size of an agent's own workspace in MiB, or 0 when it works in another's (a shared-workspace child). */
const workspaceOf = (agent: Agent, workspaceMb: number): number =>
  agent.links === undefined || agent.config.isolatedWorkspace === true
    ? (agent.config.sandbox?.diskMb ?? workspaceMb)
    : 0;

export const quotaUsage = async (
  agents: Pick<AgentService, 'list'>,
  tenantId: string,
  workspaceMb: number,
): Promise<QuotaUsage> => {
  const live = await agents.list(tenantId);
  let diskMb = 0;
  for (const agent of live) diskMb += workspaceOf(agent, workspaceMb);
  return { agents: live.filter((a) => a.links === undefined).length, diskMb };
};

/** The MiB of the tenant's snapshot `id` (an agent made from it has its size); undefined: none such. */
type SnapshotMb = (tenantId: string, id: string) => Promise<number | undefined>;

const snapshotMbOf =
  (agents: Pick<AgentService, 'snapshots'>): SnapshotMb =>
  async (tenantId, id) => {
    try {
      return Math.ceil((await agents.snapshots.source(tenantId, id)).sizeBytes / (1024 * 1024));
    } catch {
      return undefined; // unknown, another tenant's, or no snapshots here: the route answers that
    }
  };

/**
 * The workspace a create asks for (MiB): a snapshot's size with `fromSnapshot` (the agent gets it,
 * whatever the default), else `sandbox.diskMb`, else the default; the route validates the body.
 */
const askedDiskMb = async (
  raw: Request,
  workspaceMb: number,
  snapshotMb: (id: string) => Promise<number | undefined>,
): Promise<number> => {
  try {
    const body = (await raw.clone().json()) as {
      sandbox?: { diskMb?: unknown };
      fromSnapshot?: unknown;
    } | null;
    if (typeof body?.fromSnapshot === 'string') {
      const size = await snapshotMb(body.fromSnapshot);
      if (size !== undefined) return size;
    }
    const asked = body?.sandbox?.diskMb;
    return typeof asked === 'number' && Number.isFinite(asked) ? asked : workspaceMb;
  } catch {
    return workspaceMb;
  }
};

function check(quotas: TenantQuotas, used: QuotaUsage, asked: number): void {
  if (quotas.agents !== undefined && used.agents >= quotas.agents)
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `This tenant has ${used.agents} agents, its quota (${quotas.agents}); delete one first, or ask the operator for more.`,
      { data: { limit: 'agents', max: quotas.agents } },
    );
  if (quotas.diskMb !== undefined && used.diskMb + asked > quotas.diskMb)
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `This tenant's workspaces hold ${used.diskMb} MiB of its ${quotas.diskMb} MiB quota; a workspace of ${asked} MiB does not fit. Ask for a smaller one (sandbox.diskMb), delete an agent, or ask the operator for more.`,
      { data: { limit: 'diskMb', max: quotas.diskMb } },
    );
}

/** Per store (keyed by its tenant port, which both admissions are given), per tenant: the end of the last create admitted. */
const turnsByStore = new WeakMap<object, Map<string, Promise<unknown>>>();

/**
 * Runs `work` (a quota's check and the create it admits) after every create of the tenant admitted
 * before it on this store, the API's and children's alike, and on PostgreSQL in the tenant's turn
 * across replicas too (TenantStore.quotaTurn): a check then counts every agent made before it.
 * Its rejection is the caller's; the queue goes on.
 */
export function tenantTurn<T>(
  tenants: Pick<TenantStore, 'quotaTurn'>,
  tenantId: string,
  work: () => Promise<T>,
): Promise<T> {
  const turns = turnsByStore.get(tenants) ?? new Map<string, Promise<unknown>>();
  turnsByStore.set(tenants, turns);
  const before = turns.get(tenantId) ?? Promise.resolve();
  const mine = before.then(() => tenants.quotaTurn?.('agents', tenantId, work) ?? work());
  const settled = mine.catch(() => undefined);
  turns.set(tenantId, settled);
  void settled.then(() => {
    if (turns.get(tenantId) === settled) turns.delete(tenantId);
  });
  return mine;
}

/** AgentServiceOptions.admitWorkspace: checks a child's workspace, then runs `make` (its create) in the same turn. */
export type AdmitWorkspace = <T>(
  tenantId: string,
  diskMb: number | undefined,
  make: () => Promise<T>,
) => Promise<T>;

/**
 * The check of a child with a workspace of its own (AgentServiceOptions.admitWorkspace): its
 * `diskMb` (undefined: the default) against its tenant's disk quota, like a create through the API,
 * and in the same per-tenant turns: children made at once (a batch of forks, teammates) and API
 * creates each count those made before them.
 */
export const childWorkspaceQuota =
  (
    tenants: Pick<TenantStore, 'getTenant' | 'quotaTurn'>,
    agents: () => Pick<AgentService, 'list'>,
    workspaceMb: number,
  ): AdmitWorkspace =>
  async (tenantId, diskMb, make) => {
    if ((await tenants.getTenant(tenantId))?.quotas?.diskMb === undefined) return make();
    return tenantTurn(tenants, tenantId, async () => {
      // Read again in the turn: a quota the operator lowered meanwhile holds for this create.
      const max = (await tenants.getTenant(tenantId))?.quotas?.diskMb;
      if (max !== undefined)
        check({ diskMb: max }, await quotaUsage(agents(), tenantId, workspaceMb), diskMb ?? workspaceMb);
      return make();
    });
  };

export const agentQuota = (
  tenants: Pick<TenantStore, 'getTenant' | 'quotaTurn'>,
  agents: Pick<AgentService, 'list' | 'snapshots'>,
  workspaceMb: number,
): MiddlewareHandler<ApiEnv> => {
  const snapshotMb = snapshotMbOf(agents);
  return async function agentQuota(c, next) {
    if (c.req.method !== 'POST' || c.req.path !== '/v1/agents') return next();
    const tenantId = c.get('tenant').id;
    const quotasOf = async () => (await tenants.getTenant(tenantId))?.quotas ?? {};
    const bounded = (q: TenantQuotas): boolean => q.agents !== undefined || q.diskMb !== undefined;
    if (!bounded(await quotasOf())) return next();
    // The body's size is read before the turn (it may read a snapshot); the quotas again in it, so
    // a quota the operator lowered or set meanwhile holds for this create.
    const asked = await askedDiskMb(c.req.raw, workspaceMb, (id) => snapshotMb(tenantId, id));
    await tenantTurn(tenants, tenantId, async () => {
      const quotas = await quotasOf();
      if (bounded(quotas)) check(quotas, await quotaUsage(agents, tenantId, workspaceMb), asked);
      await next();
    });
  };
};
