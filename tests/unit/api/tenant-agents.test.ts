// The operator reads one tenant's agents (GET /v1/tenants/:id/agents, admin key): every agent of
// it, whether or not it has a sandbox yet, with its state; never another tenant's; a tenant key,
// no key and an unknown tenant are refused.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ADMIN_KEY, type Api, type Loose, makeApi } from './harness.ts';

let api: Api;
beforeEach(async () => {
  api = await makeApi();
});
afterEach(async () => {
  await api.close();
});

it("lists every agent of the tenant with its state, and none of another tenant's", async () => {
  const idle = await api.createAgent(api.keyA);
  const used = await api.createAgent(api.keyA);
  await api.call(api.keyA, used.id, [
    { id: 'w', name: 'write', arguments: { file_path: 'a', content: 'b' } },
  ]);
  const other = await api.createAgent(api.keyB);
  const res = await api.request(ADMIN_KEY, 'GET', `/v1/tenants/${api.tenantA}/agents`);
  expect(res.status).toBe(200);
  const agents = res.json.agents as Loose[];
  expect(agents.map((a) => a.id).sort()).toEqual([idle.id, used.id].sort());
  expect(agents.find((a) => a.id === idle.id)).toMatchObject({
    preset: idle.preset,
    state: { sandbox: 'none' },
  });
  expect(JSON.stringify(res.json)).not.toContain(other.id);
  // The tenant's own list says the same.
  const own = (await api.request(api.keyA, 'GET', '/v1/agents')).json.agents as Loose[];
  expect(own.map((a) => a.id).sort()).toEqual(agents.map((a) => a.id).sort());
});

it('refuses tenant keys, no key and unknown tenants', async () => {
  for (const key of [api.keyA, api.keyB, undefined])
    expect((await api.request(key, 'GET', `/v1/tenants/${api.tenantA}/agents`)).status).toBe(401);
  const unknown = await api.request(ADMIN_KEY, 'GET', '/v1/tenants/ten_nope/agents');
  expect(unknown.status).toBe(404);
  expect(unknown.json.error.code).toBe('NOT_FOUND');
});
