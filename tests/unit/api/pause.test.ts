// Pause and resume through the API with the memory provider (the docker provider's stop and freeze
// are tests/integration/api/pause.test.ts): the state a pause shows, idempotence, a call that
// resumes or is refused as the tenant's settings say, a child sharing its parent's workspace,
// another tenant's agent, and hostile bodies.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { type Api, makeApi } from './harness.ts';

let api: Api;
beforeEach(async () => {
  api = await makeApi();
});
afterEach(async () => {
  await api.close();
});

const write = (agentId: string, content: string, key = api.keyA) =>
  api.call(key, agentId, [{ id: 'w', name: 'write', arguments: { file_path: 'a.txt', content } }]);
const read = (agentId: string) =>
  api.call(api.keyA, agentId, [{ id: 'r', name: 'read', arguments: { file_path: 'a.txt' } }]);
const post = (agentId: string, what: 'pause' | 'resume', body?: unknown, key = api.keyA) =>
  api.request(key, 'POST', `/v1/agents/${agentId}/${what}`, body);
const stateOf = async (agentId: string) =>
  (await api.request(api.keyA, 'GET', `/v1/agents/${agentId}`)).json.state;

describe('pause and resume', () => {
  it('shows the pause in the agent and the list, keeps it once made, and clears it at resume', async () => {
    const { id } = await api.createAgent(api.keyA);
    expect((await write(id, 'one')).json.results[0].ok).toBe(true);
    const paused = await post(id, 'pause');
    expect(paused.status).toBe(200);
    expect(paused.json).toMatchObject({
      agentId: id,
      paused: true,
      pause: { mode: 'stop', by: 'api', at: expect.any(Number) },
      kept: ['workspace files'],
      lost: ['processes', 'background jobs', 'terminals', '/tmp'],
      holds: [],
    });
    expect(await stateOf(id)).toMatchObject({ sandbox: 'paused', pause: paused.json.pause });
    const listed = (await api.request(api.keyA, 'GET', '/v1/agents')).json.agents;
    expect(listed.find((a: { id: string }) => a.id === id).state.sandbox).toBe('paused');
    expect((await post(id, 'pause', { mode: 'freeze' })).json.pause).toEqual(paused.json.pause);

    expect((await post(id, 'resume')).json).toEqual({ agentId: id, paused: false });
    expect((await post(id, 'resume')).json).toEqual({ agentId: id, paused: false });
    expect((await stateOf(id)).sandbox).not.toBe('paused');
    expect((await read(id)).json.results[0].ok).toBe(true);
  });

  it('a freeze answers what it keeps and holds', async () => {
    const { id } = await api.createAgent(api.keyA);
    await write(id, 'one');
    expect((await post(id, 'pause', { mode: 'freeze' })).json).toMatchObject({
      pause: { mode: 'freeze' },
      kept: ['workspace files', 'processes', 'background jobs', 'terminals', '/tmp'],
      holds: ['memory'],
    });
  });

  it("a freeze past the operator's bound becomes a stop, its workspace kept; a younger one stays frozen", async () => {
    await api.close();
    let clock = 1_000_000;
    api = await makeApi({}, { agents: { freeze: { maxMs: 400 }, now: () => clock } });
    const [old, young, stopped] = [
      await api.createAgent(api.keyA),
      await api.createAgent(api.keyA),
      await api.createAgent(api.keyA),
    ];
    for (const { id } of [old, young, stopped]) await write(id, `in ${id}`);
    const frozenAt = clock;
    expect((await post(old.id, 'pause', { mode: 'freeze' })).json.pause.mode).toBe('freeze');
    expect((await post(stopped.id, 'pause')).json.pause.mode).toBe('stop');
    clock += 300;
    expect((await post(young.id, 'pause', { mode: 'freeze' })).json.pause.mode).toBe('freeze');
    // 500 ms after the first freeze (the bound 400), 200 after the second: the clock stays there.
    clock += 200;
    const state = await until(
      async () => {
        const s = await stateOf(old.id);
        return s.pause?.mode === 'stop' && s;
      },
      { what: 'the old freeze stopped' },
    );
    expect(state.pause).toEqual({ mode: 'stop', at: frozenAt, by: 'api' });
    // Pausing a paused agent answers its pause: it no longer holds memory.
    const shown = (await post(old.id, 'pause', { mode: 'freeze' })).json;
    expect(shown).toMatchObject({ lost: ['processes', 'background jobs', 'terminals', '/tmp'], holds: [] });
    expect((await stateOf(young.id)).pause).toEqual({ mode: 'freeze', at: frozenAt + 300, by: 'api' });
    expect((await stateOf(stopped.id)).pause).toEqual({ mode: 'stop', at: frozenAt, by: 'api' });
    // Its workspace is kept: a call resumes it and reads its file.
    expect((await read(old.id)).json.results[0].content[0].text).toContain(`in ${old.id}`);
  });

  it('a call resumes a paused agent by default, or answers 409 AGENT_PAUSED where the tenant says refuse', async () => {
    const { id } = await api.createAgent(api.keyA);
    await write(id, 'one');
    await post(id, 'pause');
    expect((await read(id)).json.results[0].ok).toBe(true);
    expect((await stateOf(id)).sandbox).not.toBe('paused');

    const put = await api.request(api.keyA, 'PUT', '/v1/settings', {
      pause: { onCall: 'refuse', idleSeconds: 60 },
    });
    expect(put.json.pause).toEqual({ onCall: 'refuse', idleSeconds: 60 });
    await post(id, 'pause');
    const refused = await read(id);
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: 'AGENT_PAUSED', data: { agentId: id } });
    const file = await api.request(api.keyA, 'GET', `/v1/agents/${id}/files?path=a.txt`);
    expect(file.status).toBe(409);
    expect((await stateOf(id)).sandbox).toBe('paused');
    // A keyed batch refused so ran nothing: after the resume the same key runs it (no stored 409).
    const keyed = () =>
      api.request(
        api.keyA,
        'POST',
        `/v1/agents/${id}/calls`,
        { calls: [{ id: 'k', name: 'read', arguments: { file_path: 'a.txt' } }] },
        { 'Idempotency-Key': 'pause-key-1' },
      );
    expect((await keyed()).status).toBe(409);
    await post(id, 'resume');
    expect((await read(id)).json.results[0].ok).toBe(true);
    const replay = await keyed();
    expect(replay.status).toBe(200);
    expect(replay.json.results[0].ok).toBe(true);
    // Tenant B's settings are its own.
    expect((await api.request(api.keyB, 'GET', '/v1/settings')).json.pause).toEqual({
      idleSeconds: 0,
      onCall: 'resume',
    });
  });

  it("a child working in its parent's workspace cannot be paused on its own", async () => {
    const parent = await api.createAgent(api.keyA);
    const tenantId = (await api.store.tenants.verifyKey(api.keyA))?.id as string;
    const child = await api.store.agents.create({
      tenantId,
      preset: 'standard',
      mode: 'native',
      config: {},
      links: { parentId: parent.id, role: 'child', depth: 1 },
    });
    for (const what of ['pause', 'resume'] as const) {
      const res = await post(child.id, what);
      expect(res.status).toBe(409);
      expect(res.json.error).toMatchObject({ code: 'AGENT_SHARES_WORKSPACE', data: { parentId: parent.id } });
    }
    // The parent's pause shows on the child, which shares its workspace.
    await write(parent.id, 'p');
    await post(parent.id, 'pause');
    expect((await stateOf(child.id)).sandbox).toBe('paused');
  });

  it("another tenant's agent is 404; bad bodies are 400", async () => {
    const { id } = await api.createAgent(api.keyA);
    for (const what of ['pause', 'resume'] as const) {
      const res = await post(id, what, undefined, api.keyB);
      expect(res.status).toBe(404);
      expect(res.json.error.code).toBe('NOT_FOUND');
    }
    expect((await stateOf(id)).sandbox).toBe('none');
    expect((await post('agt_nope', 'pause')).status).toBe(404);
    expect((await post('../x', 'pause')).status).toBe(404);
    for (const body of [{ mode: 'hibernate' }, { mode: 'stop', extra: 1 }, 'not json', [1]])
      expect((await post(id, 'pause', body)).status).toBe(400);
    for (const body of [
      { pause: { idleSeconds: -1 } },
      { pause: { idleSeconds: 1.5 } },
      { pause: { idleSeconds: 86_401 } },
      { pause: { onCall: 'maybe' } },
      { pause: {}, other: true },
      { pause: 'x' },
    ])
      expect((await api.request(api.keyA, 'PUT', '/v1/settings', body)).status).toBe(400);
    expect((await api.request(undefined, 'GET', '/v1/settings')).status).toBe(401);
  });
});
