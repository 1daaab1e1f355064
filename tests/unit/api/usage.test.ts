// An agent's state and usage (GET /v1/agents/:id/usage, `state` on the agent resource) and the
// operator's workspaces (GET /v1/admin/workspaces), through the API with the memory provider.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { ADMIN_KEY, type Api, makeApi } from './harness.ts';

let api: Api;
beforeEach(async () => {
  api = await makeApi();
});
afterEach(async () => {
  await api.close();
});

const usage = async (agentId: string, key = api.keyA) =>
  (await api.request(key, 'GET', `/v1/agents/${agentId}/usage`)).json;

const write = (agentId: string, path: string, content: string) =>
  api.call(api.keyA, agentId, [{ id: `w-${path}`, name: 'write', arguments: { file_path: path, content } }]);

describe('agent state and usage', () => {
  it('a new agent has no sandbox and nothing logged; a call makes its sandbox ready and its counts grow', async () => {
    const agent = await api.createAgent(api.keyA, { sandbox: { diskMb: 64 } });
    const before = await usage(agent.id);
    expect(before).toMatchObject({
      id: agent.id,
      state: { sandbox: 'none', batches: 0 },
      log: { events: 0, calls: 0 },
    });
    expect(before.disk).toBeUndefined();
    expect(before.state.lastCallAt).toBeUndefined();

    expect((await write(agent.id, 'a.txt', 'x'.repeat(1000))).status).toBe(200);
    const first = await usage(agent.id);
    expect(first.state.sandbox).toBe('ready');
    expect(first.state.lastCallAt).toEqual(expect.any(Number));
    expect(first.log.calls).toBe(1);
    expect(first.log.events).toBeGreaterThanOrEqual(2);
    expect(first.log.lastEventAt).toEqual(expect.any(Number));
    expect(first.disk).toEqual({ usedBytes: 1000, limitBytes: 64 * 1024 * 1024 });

    await write(agent.id, 'b.txt', 'y'.repeat(500));
    const second = await usage(agent.id);
    expect(second.log.calls).toBe(2);
    expect(second.log.events).toBeGreaterThan(first.log.events);
    expect(second.disk.usedBytes).toBe(1500);
  });

  it('the agent list and the agent show the same state, without touching the sandbox', async () => {
    const idle = await api.createAgent(api.keyA);
    const used = await api.createAgent(api.keyA);
    await write(used.id, 'a.txt', 'x');
    const list = (await api.request(api.keyA, 'GET', '/v1/agents')).json.agents;
    const stateOf = (id: string) => list.find((a: { id: string }) => a.id === id).state;
    expect(stateOf(idle.id)).toEqual({ sandbox: 'none', batches: 0 });
    expect(stateOf(used.id)).toMatchObject({ sandbox: 'ready', batches: 0 });
    expect((await api.request(api.keyA, 'GET', `/v1/agents/${used.id}`)).json.state).toEqual(
      stateOf(used.id),
    );
    expect(await api.sandboxes.get(idle.id)).toBeUndefined();
  });

  it('a held call shows as a running batch until it is answered', async () => {
    const agent = await api.createAgent(api.keyA, {
      remoteTools: [{ name: 'hold', description: 'waits', parameters: { type: 'object' } }],
    });
    const call = api.call(api.keyA, agent.id, [{ id: 'h', name: 'hold', arguments: {} }]);
    const request = await until(async () => {
      const res = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/requests?state=pending`);
      return res.json.requests[0] as { id: string } | undefined;
    });
    expect((await usage(agent.id)).state.batches).toBe(1);
    const listed = (await api.request(api.keyA, 'GET', '/v1/agents')).json.agents[0];
    expect(listed.state.batches).toBe(1);
    await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/requests/${request.id}`, { result: 'done' });
    expect((await call).json.results[0].ok).toBe(true);
    const after = await usage(agent.id);
    expect(after.state.batches).toBe(0);
    // A remote tool needs no sandbox.
    expect(after.state.sandbox).toBe('none');
    expect(after.log.calls).toBe(1);
  });

  it("another tenant's agent is 404, like an unknown one", async () => {
    const agent = await api.createAgent(api.keyA);
    const res = await api.request(api.keyB, 'GET', `/v1/agents/${agent.id}/usage`);
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe('NOT_FOUND');
    expect((await api.request(api.keyA, 'GET', '/v1/agents/agt_nope/usage')).status).toBe(404);
  });
});

describe('operator: disk per workspace', () => {
  it('lists the workspaces of every tenant with their disk, paged by agent id', async () => {
    const a = await api.createAgent(api.keyA, { sandbox: { diskMb: 32 } });
    const b = await api.createAgent(api.keyB, { sandbox: { diskMb: 16 } });
    await api.createAgent(api.keyA); // no sandbox: not listed
    await write(a.id, 'a.txt', 'x'.repeat(2048));
    await api.call(api.keyB, b.id, [
      { id: 'w', name: 'write', arguments: { file_path: 'b', content: 'yy' } },
    ]);

    const all = await api.request(ADMIN_KEY, 'GET', '/v1/admin/workspaces');
    expect(all.status).toBe(200);
    const tenantA = (await api.store.tenants.verifyKey(api.keyA))!.id;
    const tenantB = (await api.store.tenants.verifyKey(api.keyB))!.id;
    expect(all.json.next).toBeUndefined();
    expect(all.json.workspaces).toEqual(
      [
        { tenantId: tenantA, agentId: a.id, disk: { usedBytes: 2048, limitBytes: 32 * 1024 * 1024 } },
        { tenantId: tenantB, agentId: b.id, disk: { usedBytes: 2, limitBytes: 16 * 1024 * 1024 } },
      ].sort((x, y) => (x.agentId < y.agentId ? -1 : 1)),
    );

    const first = await api.request(ADMIN_KEY, 'GET', '/v1/admin/workspaces?limit=1');
    expect(first.json.workspaces).toHaveLength(1);
    const rest = await api.request(ADMIN_KEY, 'GET', `/v1/admin/workspaces?limit=1&after=${first.json.next}`);
    expect([...first.json.workspaces, ...rest.json.workspaces]).toEqual(all.json.workspaces);
    expect(rest.json.next).toBeUndefined();

    const bad = await api.request(ADMIN_KEY, 'GET', '/v1/admin/workspaces?limit=1000');
    expect(bad.status).toBe(400);
  });

  it('refuses a tenant key and no key', async () => {
    expect((await api.request(api.keyA, 'GET', '/v1/admin/workspaces')).status).toBe(401);
    expect((await api.request(undefined, 'GET', '/v1/admin/workspaces')).status).toBe(401);
  });
});
