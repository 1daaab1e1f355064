// The operator's per-tenant quotas where a request makes something they bound (TenantQuotas,
// host/store/tenants-port.ts): POST /v1/agents past the tenant's `agents` quota answers
// LIMIT_EXCEEDED (data: limit "agents", max), with nothing made. Invariant: in one process the
// count and the create of one tenant's agents run one at a time, so concurrent creates cannot
// pass the quota together; several replicas each hold it against what they count (a tenant
// creating on two at once may pass it by one per replica, like the other per-tenant limits).
import type { MiddlewareHandler } from 'hono';
import type { AgentService } from '../agents/service.ts';
import { SandboxError } from '../errors.ts';
import type { TenantStore } from '../store/index.ts';
import type { ApiEnv } from './env.ts';

/** The tenant's live top-level agents (what the `agents` quota counts). */
export const topLevelAgents = async (agents: Pick<AgentService, 'list'>, tenantId: string): Promise<number> =>
  (await agents.list(tenantId)).filter((a) => a.links === undefined).length;

export const agentQuota = (
  tenants: Pick<TenantStore, 'getTenant'>,
  agents: Pick<AgentService, 'list'>,
): MiddlewareHandler<ApiEnv> => {
  /** Per tenant: the end of the last create admitted here. */
  const turns = new Map<string, Promise<unknown>>();
  return async function agentQuota(c, next) {
    if (c.req.method !== 'POST' || c.req.path !== '/v1/agents') return next();
    const tenantId = c.get('tenant').id;
    const max = (await tenants.getTenant(tenantId))?.quotas?.agents;
    if (max === undefined) return next();
    const before = turns.get(tenantId) ?? Promise.resolve();
    const mine = before.then(async () => {
      const used = await topLevelAgents(agents, tenantId);
      if (used >= max)
        throw new SandboxError(
          'LIMIT_EXCEEDED',
          `This tenant has ${used} agents, its quota (${max}); delete one first, or ask the operator for more.`,
          { data: { limit: 'agents', max } },
        );
      await next();
    });
    const settled = mine.catch(() => undefined);
    turns.set(tenantId, settled);
    void settled.then(() => {
      if (turns.get(tenantId) === settled) turns.delete(tenantId);
    });
    await mine;
  };
};
