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
  expect((await limits(api.keyA)).json).toEqual({ quotas: {}, usage: { agents: 0 } });
  const set = await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantA}/limits`, { agents: 2 });
  expect(set.status).toBe(200);
  expect(set.json).toMatchObject({ id: api.tenantA, quotas: { agents: 2 } });
  await api.createAgent(api.keyA);
  // Three at once for the last place: one is made, two refused.
  const raced = await Promise.all([1, 2, 3].map(() => api.request(api.keyA, 'POST', '/v1/agents', {})));
  expect(raced.map((r) => r.status).sort()).toEqual([201, 400, 400]);
  const refused = raced.find((r) => r.status === 400);
  expect(refused?.json.error).toMatchObject({ code: 'LIMIT_EXCEEDED', data: { limit: 'agents', max: 2 } });
  expect((await limits(api.keyA)).json).toEqual({ quotas: { agents: 2 }, usage: { agents: 2 } });
  expect((await api.request(api.keyA, 'GET', '/v1/agents')).json.agents).toHaveLength(2);
  // The other tenant is not bound by it.
  for (let i = 0; i < 3; i++) await api.createAgent(api.keyB);
  expect((await limits(api.keyB)).json).toEqual({ quotas: {}, usage: { agents: 3 } });
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
  for (const body of [{ agents: -1 }, { agents: 1.5 }, { agents: '2' }, { disk: 1 }, { agents: 1e9 }]) {
    const res = await api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${api.tenantA}/limits`, body);
    expect(res.status, JSON.stringify(body)).toBe(400);
  }
  expect((await api.request(ADMIN_KEY, 'PUT', '/v1/tenants/ten_nope/limits', { agents: 1 })).status).toBe(
    404,
  );
  expect((await limits(api.keyA)).json.quotas).toEqual({});
  expect((await api.request(undefined, 'GET', '/v1/limits')).status).toBe(401);
});
