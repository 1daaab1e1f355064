// Per-tenant quotas through the public API: the operator sets a tenant's agent quota, the tenant
// sees it with its usage, a create past it is refused (concurrent ones too) and nothing is made,
// the other tenant is not bound by it, and a tenant cannot set its own.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ADMIN_KEY, type Api, makeApi } from './harness.ts';

let api: Api;
beforeEach(async () => {
  api = await makeApi();
});
afterEach(async () => {
  await api.close();
});

const limits = (key: string) => api.request(key, 'GET', '/v1/limits');

it("bounds a tenant's agents at the quota the operator set, and shows it to the tenant", async () => {
  expect((await limits(api.keyA)).json).toEqual({
    quotas: {},
    usage: { agents: 0, diskMb: 0, logBytes: 0 },
  });
  const set = await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantA}/limits`, { agents: 2 });
  expect(set.status).toBe(200);
  expect(set.json).toMatchObject({ id: api.tenantA, quotas: { agents: 2 } });
  await api.createAgent(api.keyA);
  // Three at once for the last place: one is made, two refused.
  const raced = await Promise.all([1, 2, 3].map(() => api.request(api.keyA, 'POST', '/v1/agents', {})));
  expect(raced.map((r) => r.status).sort()).toEqual([201, 400, 400]);
  const refused = raced.find((r) => r.status === 400);
  expect(refused?.json.error).toMatchObject({ code: 'LIMIT_EXCEEDED', data: { limit: 'agents', max: 2 } });
  expect((await limits(api.keyA)).json).toEqual({
    quotas: { agents: 2 },
    usage: { agents: 2, diskMb: 2048, logBytes: expect.any(Number) },
  });
  expect((await api.request(api.keyA, 'GET', '/v1/agents')).json.agents).toHaveLength(2);
  // The other tenant is not bound by it.
  for (let i = 0; i < 3; i++) await api.createAgent(api.keyB);
  expect((await limits(api.keyB)).json).toEqual({
    quotas: {},
    usage: { agents: 3, diskMb: 3072, logBytes: expect.any(Number) },
  });
  // Deleting one makes room; clearing the quota lifts it.
  const [first] = (await api.request(api.keyA, 'GET', '/v1/agents')).json.agents;
  expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${first.id}`)).status).toBe(204);
  await api.createAgent(api.keyA);
  expect(
    (await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantA}/limits`, {})).json.quotas,
  ).toBeUndefined();
  await api.createAgent(api.keyA);
});

it('refuses hostile quota requests', async () => {
  for (const key of [api.keyA, api.keyB]) {
    expect(
      (await api.request(key, 'PUT', `/v1/tenants/${api.tenantA}/limits`, { agents: 1000 })).status,
    ).toBe(401);
  }
  for (const body of [
    { agents: -1 },
    { agents: 1.5 },
    { agents: '2' },
    { disk: 1 },
    { agents: 1e9 },
    { diskMb: -1 },
    { diskMb: 2.5 },
    { diskMb: '64' },
    { logBytes: -1 },
    { logBytes: 1.5 },
    { logBytes: '1000' },
    { plugins: -1 },
    { plugins: 2e6 },
    { plugins: true },
  ]) {
    const res = await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantA}/limits`, body);
    expect(res.status, JSON.stringify(body)).toBe(400);
  }
  expect((await api.request(ADMIN_KEY, 'PUT', '/v1/tenants/ten_nope/limits', { agents: 1 })).status).toBe(
    404,
  );
  expect((await limits(api.keyA)).json.quotas).toEqual({});
  expect((await api.request(undefined, 'GET', '/v1/limits')).status).toBe(401);
});

it("bounds a tenant's workspaces at its disk quota, counting each agent's own size", async () => {
  const set = await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantA}/limits`, { diskMb: 1500 });
  expect(set.json, JSON.stringify(set.json)).toMatchObject({ quotas: { diskMb: 1500 } });
  // 1024 MiB (the default size) fits; another 1024 does not, 256 does, and a third of 256 too.
  await api.createAgent(api.keyA);
  const refused = await api.request(api.keyA, 'POST', '/v1/agents', {});
  expect(refused.status).toBe(400);
  expect(refused.json.error).toMatchObject({ code: 'LIMIT_EXCEEDED', data: { limit: 'diskMb', max: 1500 } });
  expect(refused.json.error.message).toMatch(
    /1024 MiB of its 1500 MiB quota; a workspace of 1024 MiB does not fit/,
  );
  const small = await api.request(api.keyA, 'POST', '/v1/agents', { sandbox: { diskMb: 256 } });
  expect(small.status).toBe(201);
  // Two at once for the last 220 MiB: one is made.
  const raced = await Promise.all(
    [1, 2].map(() => api.request(api.keyA, 'POST', '/v1/agents', { sandbox: { diskMb: 200 } })),
  );
  expect(raced.map((r) => r.status).sort()).toEqual([201, 400]);
  expect((await limits(api.keyA)).json).toEqual({
    quotas: { diskMb: 1500 },
    usage: { agents: 3, diskMb: 1480, logBytes: expect.any(Number) },
  });
  // Hostile sizes are the route's to refuse, not the quota's to count.
  expect((await api.request(api.keyA, 'POST', '/v1/agents', { sandbox: { diskMb: 'x' } })).status).toBe(400);
  // The other tenant is not bound by it; deleting an agent gives its workspace back.
  expect((await api.request(api.keyB, 'POST', '/v1/agents', { sandbox: { diskMb: 4096 } })).status).toBe(201);
  expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${small.json.id}`)).status).toBe(204);
  expect((await api.request(api.keyA, 'POST', '/v1/agents', { sandbox: { diskMb: 256 } })).status).toBe(201);
});

it('holds children made at once, on several parents and racing API creates, to the disk quota', async () => {
  // Six parents of 100 MiB whose children get a copy of their workspace (100 MiB each), then a
  // quota with room for two more workspaces: each parent forks at once, and the API creates too.
  const parents = [];
  for (let i = 0; i < 6; i++)
    parents.push(
      await api.createAgent(api.keyA, {
        subagents: true,
        childWorkspace: 'isolated',
        sandbox: { diskMb: 100 },
      }),
    );
  await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantA}/limits`, { diskMb: 850 });
  const spawn = { description: 'd', prompt: 'p', run_in_background: true };
  const fork = async (id: string) => {
    const res = await api.call(api.keyA, id, [{ id: 's', name: 'subagent', arguments: spawn }]);
    const [result] = res.json.results;
    if (result.ok) return 'made';
    expect(result.error.data).toEqual({ limit: 'diskMb', max: 850 });
    return result.error.code;
  };
  const create = async () => {
    const res = await api.request(api.keyA, 'POST', '/v1/agents', { sandbox: { diskMb: 100 } });
    return res.status === 201 ? 'made' : res.json.error.code;
  };
  const outcomes = await Promise.all([...parents.map((p) => fork(p.id)), create(), create()]);
  expect(outcomes.filter((o) => o === 'made')).toHaveLength(2);
  expect(outcomes.filter((o) => o === 'LIMIT_EXCEEDED')).toHaveLength(6);
  expect((await limits(api.keyA)).json.usage.diskMb).toBe(800);
  // A child in its parent's workspace takes none of the quota: still made.
  const sharing = await api.createAgent(api.keyB, { subagents: true });
  await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantB}/limits`, { diskMb: 1024 });
  const child = await api.call(api.keyB, sharing.id, [{ id: 's', name: 'subagent', arguments: spawn }]);
  expect(child.json.results[0].ok).toBe(true);
});

const KiB = 1024;
const write = (i: number) => ({
  id: `w${i}`,
  name: 'write',
  arguments: { file_path: `f${i}.txt`, content: `${i}:`.padEnd(8 * KiB, 'x') },
});

it("holds a tenant's log at its logBytes quota, shows its usage, and follows a change at once", async () => {
  // Set before the tenant's first event: its budget is read from the store with its usage.
  const set = await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantA}/limits`, {
    logBytes: 64 * KiB,
  });
  expect(set.json).toMatchObject({ quotas: { logBytes: 64 * KiB } });
  const a = await api.createAgent(api.keyA);
  const b = await api.createAgent(api.keyB);
  let refused: { error?: { code?: string } } | undefined;
  for (let i = 0; i < 40 && refused === undefined; i++) {
    const res = await api.call(api.keyA, a.id, [write(i)]);
    expect(res.status).toBe(200);
    if (res.json.results[0].ok !== true) refused = res.json.results[0];
  }
  expect(refused?.error?.code).toBe('STORE_BUDGET_EXCEEDED');
  const full = (await limits(api.keyA)).json;
  expect(full.quotas).toEqual({ logBytes: 64 * KiB });
  expect(full.usage.logBytes).toBeGreaterThan(48 * KiB);
  expect(full.usage.logBytes).toBeLessThanOrEqual(64 * KiB + 2 * KiB); // results past it are kept small
  // The store's own refusal names the tenant's budget, not the service's.
  const refusal = await api.store.events
    .append([
      {
        sessionId: a.id,
        surface: 'current',
        type: 'tool.call',
        callId: 'x',
        data: { name: 'write', content: 'x'.repeat(16 * KiB) },
      },
    ])
    .then(
      () => undefined,
      (e: unknown) => e as { code: string; data: unknown; message: string },
    );
  expect(refusal).toMatchObject({ code: 'STORE_BUDGET_EXCEEDED', data: { budget: 64 * KiB } });
  expect(refusal?.message).toMatch(`of its ${64 * KiB} bytes; an event of`);
  // The other tenant has the service's budget.
  for (let i = 0; i < 12; i++)
    expect((await api.call(api.keyB, b.id, [write(i)])).json.results[0].ok).toBe(true);
  // Raised: admitted again at once, no restart.
  await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantA}/limits`, { logBytes: 256 * KiB });
  expect((await api.call(api.keyA, a.id, [write(100)])).json.results[0].ok).toBe(true);
  // Cleared: the service's budget again.
  await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantA}/limits`, {});
  expect((await api.store.events.usage()).find((u) => u.tenantId === api.tenantA)?.budget).toBeGreaterThan(
    256 * KiB,
  );
  expect((await limits(api.keyB)).json.usage.logBytes).toBeGreaterThan(12 * 8 * KiB);
});
