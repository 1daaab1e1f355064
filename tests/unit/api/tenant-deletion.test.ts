// DELETE /v1/tenants/:id through the public API: the tenant is refused at once on every key, its
// agents (and their sandboxes), egress settings with their sealed credentials, logs and keys go in
// the background, another tenant is untouched, and a deletion stopped midway (a crash) is resumed
// by a new service on the same store.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { until } from '../../helpers/until.ts';
import { ADMIN_KEY, type Api, makeApi } from './harness.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const open = async (...args: Parameters<typeof makeApi>): Promise<Api> => {
  const api = await makeApi(...args);
  cleanups.push(() => api.close());
  return api;
};

const write = (api: Api, key: string, agentId: string) =>
  api.call(key, agentId, [
    { id: 'w', name: 'write', arguments: { file_path: 'a.txt', content: 'secret words' } },
  ]);

/** Rows of the tenant in any table that has a tenant_id column (the agents' sessions by join). */
const rowsOf = async (api: Api, tenantId: string) => {
  await api.store.events.flush();
  return api.store.tenantPurge.remaining(tenantId);
};

describe('DELETE /v1/tenants/:id', () => {
  it('refuses every key at once, removes agents, sandboxes, settings and logs, and leaves the other tenant alone', async () => {
    const api = await open({}, { egress: { testHosts: [{ ip: '127.0.0.1' }] } });
    const spare = await api.request(api.keyA, 'POST', '/v1/keys', { name: 'spare' });
    const agents = [await api.createAgent(api.keyA), await api.createAgent(api.keyA)];
    for (const agent of agents) expect((await write(api, api.keyA, agent.id)).status).toBe(200);
    const put = await api.request(api.keyA, 'PUT', '/v1/egress', {
      allow: [{ host: 'example.com' }],
      credentials: [
        { name: 'tok', host: 'example.com', header: 'Authorization', value: 'Bearer upstream-secret' },
      ],
    });
    expect(put.status).toBe(200);
    const other = await api.createAgent(api.keyB);
    expect((await write(api, api.keyB, other.id)).status).toBe(200);
    expect((await api.request(api.keyA, 'GET', '/v1/agents')).status).toBe(200); // remembered now
    expect(Object.keys(await rowsOf(api, api.tenantA))).toEqual(
      expect.arrayContaining(['events', 'sessions', 'agents', 'tenant_egress', 'api_keys']),
    );

    const deleted = await api.request(ADMIN_KEY, 'DELETE', `/v1/tenants/${api.tenantA}`);
    expect(deleted.status).toBe(202);
    expect(deleted.json).toMatchObject({ id: api.tenantA, state: 'deleting' });
    for (const key of [api.keyA, spare.json.apiKey]) {
      const refused = await api.request(key, 'GET', '/v1/agents');
      expect(refused.status).toBe(401);
      expect(refused.json.error.code).toBe('UNAUTHORIZED');
    }
    await api.tenantDeletion.settled(api.tenantA);
    const done = await api.request(ADMIN_KEY, 'GET', `/v1/tenants/${api.tenantA}`);
    expect(done.json).toMatchObject({ state: 'deleted', deletedAt: expect.any(Number) });
    expect(await rowsOf(api, api.tenantA)).toEqual({});
    for (const agent of agents) expect(await api.sandboxes.get(agent.id)).toBeUndefined();
    expect(await api.store.egress.get(api.tenantA)).toBeUndefined();
    expect((await api.request(ADMIN_KEY, 'GET', `/v1/tenants/${api.tenantA}/keys`)).json.keys).toEqual([]);

    // The other tenant: its agent, sandbox and log as they were.
    expect(await api.sandboxes.get(other.id)).toBeDefined();
    expect((await write(api, api.keyB, other.id)).status).toBe(200);
    expect(
      (await api.request(api.keyB, 'GET', `/v1/agents/${other.id}/events`)).json.events.length,
    ).toBeGreaterThan(2);
  });

  it('answers hostile and repeated requests plainly', async () => {
    const api = await open();
    expect((await api.request(api.keyB, 'DELETE', `/v1/tenants/${api.tenantA}`)).status).toBe(401);
    expect((await api.request(api.keyA, 'DELETE', `/v1/tenants/${api.tenantA}`)).status).toBe(401);
    expect((await api.request(undefined, 'DELETE', `/v1/tenants/${api.tenantA}`)).status).toBe(401);
    expect((await api.request(api.keyA, 'GET', '/v1/agents')).status).toBe(200);
    expect((await api.request(ADMIN_KEY, 'DELETE', '/v1/tenants/ten_nope')).status).toBe(404);
    expect((await api.request(ADMIN_KEY, 'DELETE', "/v1/tenants/'%20OR%201=1")).status).toBe(404);
    expect((await api.request(ADMIN_KEY, 'DELETE', `/v1/tenants/${api.tenantA}`)).status).toBe(202);
    await api.tenantDeletion.settled(api.tenantA);
    const again = await api.request(ADMIN_KEY, 'DELETE', `/v1/tenants/${api.tenantA}`);
    expect(again.status).toBe(202);
    expect(again.json.state).toBe('deleted');
    // A deleted tenant gets no new key, and the other tenant still works.
    expect((await api.request(ADMIN_KEY, 'POST', `/v1/tenants/${api.tenantA}/keys`, {})).status).toBe(404);
    expect((await api.request(api.keyB, 'GET', '/v1/agents')).status).toBe(200);
  });

  it('a deletion asked through the CLI (the store alone) is picked up by a running service', async () => {
    const api = await open();
    const agent = await api.createAgent(api.keyA);
    expect(await api.tenantDeletion.watch(20)).toBe(0);
    await api.store.tenants.beginDeletion(api.tenantA); // what `tenants delete` does
    expect((await api.request(api.keyA, 'GET', '/v1/agents')).status).toBe(401);
    await until(async () => (await api.store.tenants.getTenant(api.tenantA))?.state === 'deleted', {
      what: 'the watch to run the deletion',
    });
    expect(await api.sandboxes.get(agent.id)).toBeUndefined();
    expect(await api.store.tenantPurge.remaining(api.tenantA)).toEqual({});
  });

  it('a deletion stopped after some agents is resumed by a new service on the same store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-tenant-del-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'store.db');
    const sandboxes = createMemoryProvider(); // containers outlive a crashed control plane
    let deletedHere = 0;
    const crashed = await makeApi(
      {},
      {
        sandboxes,
        store: { path },
        // After the second agent this service "crashes": its deletion never goes on.
        deletion: { afterAgent: () => (++deletedHere >= 2 ? new Promise<void>(() => {}) : undefined) },
      },
    );
    const agents = [];
    for (let i = 0; i < 4; i++) {
      const agent = await crashed.createAgent(crashed.keyA);
      expect((await write(crashed, crashed.keyA, agent.id)).status).toBe(200);
      agents.push(agent);
    }
    expect((await crashed.request(ADMIN_KEY, 'DELETE', `/v1/tenants/${crashed.tenantA}`)).status).toBe(202);
    await until(() => deletedHere >= 2, { what: 'two agents deleted' });
    expect((await crashed.request(crashed.keyA, 'GET', '/v1/agents')).status).toBe(401);
    await crashed.store.events.flush();
    const midway = await crashed.request(ADMIN_KEY, 'GET', `/v1/tenants/${crashed.tenantA}`);
    expect(midway.json).toMatchObject({
      state: 'deleting',
      remaining: { agents: 4, events: expect.any(Number) },
    });
    expect((await crashed.store.agents.list(crashed.tenantA)).length).toBe(2);
    crashed.store.close(); // the crash: nothing of it runs on

    const restarted = await open({}, { sandboxes, store: { path } });
    expect(await restarted.tenantDeletion.resume()).toBe(1);
    await restarted.tenantDeletion.settled(crashed.tenantA);
    const done = await restarted.request(ADMIN_KEY, 'GET', `/v1/tenants/${crashed.tenantA}`);
    expect(done.json.state).toBe('deleted');
    expect(await restarted.store.tenantPurge.remaining(crashed.tenantA)).toEqual({});
    for (const agent of agents) expect(await sandboxes.get(agent.id)).toBeUndefined();
    expect((await restarted.request(crashed.keyB, 'GET', '/v1/agents')).status).toBe(200);
  });
});
