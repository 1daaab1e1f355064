// A create that waits for its tenant's turn is held to the quotas as they are when its turn comes:
// the operator lowered the quota while an earlier create of the tenant was still being made.
import { Hono } from 'hono';
import { expect, it } from 'vitest';
import type { AgentService } from '../../../host/agents/service.ts';
import type { Agent } from '../../../host/agents/types.ts';
import type { ApiEnv } from '../../../host/api/env.ts';
import { errorHandler } from '../../../host/api/errors.ts';
import { agentQuota, childWorkspaceQuota } from '../../../host/api/quotas.ts';
import type { TenantStore } from '../../../host/store/index.ts';
import type { TenantQuotas } from '../../../host/store/tenants-port.ts';

const TENANT = 'ten_a';

const world = (initial: TenantQuotas) => {
  let quotas = initial;
  const made: Agent[] = [];
  const tenants = {
    getTenant: async () => ({ quotas }) as Awaited<ReturnType<TenantStore['getTenant']>>,
  } as Pick<TenantStore, 'getTenant' | 'quotaTurn'>;
  const agents = {
    list: async () => made,
    snapshots: {} as AgentService['snapshots'],
  } as unknown as Pick<AgentService, 'list' | 'snapshots'>;
  return {
    tenants,
    agents,
    made,
    lower: (q: TenantQuotas) => {
      quotas = q;
    },
  };
};

const agent = (): Agent => ({ config: {} }) as Agent;

it('reads the agents quota again in the turn: a create queued behind another sees it lowered', async () => {
  const w = world({ agents: 5 });
  let release = (): void => {};
  const held = new Promise<void>((r) => {
    release = r;
  });
  let first = true;
  const app = new Hono<ApiEnv>();
  app.onError(errorHandler());
  app.use('*', async (c, next) => {
    c.set('tenant', { id: TENANT } as ApiEnv['Variables']['tenant']);
    await next();
  });
  app.use('/v1/agents', agentQuota(w.tenants, w.agents, 1024));
  app.post('/v1/agents', async (c) => {
    if (first) {
      first = false;
      await held; // the first create is still being made
    }
    w.made.push(agent());
    return c.json({ ok: true }, 201);
  });
  const post = () =>
    app.request('/v1/agents', {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
  const a = post();
  // Let the first create take its turn, then queue the second behind it.
  await new Promise((r) => setImmediate(r));
  const b = post();
  await new Promise((r) => setImmediate(r));
  w.lower({ agents: 1 });
  release();
  expect((await a).status).toBe(201);
  const refused = await b;
  expect(refused.status).toBe(400);
  expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('LIMIT_EXCEEDED');
  expect(w.made).toHaveLength(1);
});

it("reads a child's disk quota again in the turn", async () => {
  const w = world({ diskMb: 10_000 });
  const admit = childWorkspaceQuota(w.tenants, () => w.agents, 1024);
  let release = (): void => {};
  const held = new Promise<void>((r) => {
    release = r;
  });
  const a = admit(TENANT, 1024, async () => {
    await held;
    w.made.push(agent());
  });
  await new Promise((r) => setImmediate(r));
  const b = admit(TENANT, 1024, async () => {
    w.made.push(agent());
  });
  await new Promise((r) => setImmediate(r));
  w.lower({ diskMb: 1500 });
  release();
  await a;
  await expect(b).rejects.toMatchObject({ code: 'LIMIT_EXCEEDED' });
  expect(w.made).toHaveLength(1);
});
