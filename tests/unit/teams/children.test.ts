// Child agents and teams over the API, in-process (memory sandboxes): the client plays every
// agent's loop by calling tools as it. A lead spawns teammates (agents of their own, with their own
// tools and run requests), messages flow through durable mailboxes, wait_agent wakes on them,
// report settles a run, followup_task wakes an idle teammate, interrupt_agent stops a teammate's
// calls, limits refuse with stable codes, deleting a parent deletes its children, and a service
// rebuilt on the same store loses no child, message or link.
import { afterEach, describe, expect, it } from 'vitest';
import { createAgentService } from '../../../host/agents/index.ts';
import { createApp } from '../../../host/api/app.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { createRegistry, createRequestApprovals } from '../../../host/tools/index.ts';
import { until } from '../../helpers/until.ts';
import { type Api, type Loose, makeApi } from '../api/harness.ts';
import { standardSandboxTools } from '../builtin/standard-tools.ts';

let api: Api;
afterEach(async () => {
  await api?.close();
});

const hold = { name: 'hold', description: 'Waits for the client', parameters: { type: 'object' } };

let n = 0;
/** Calls one tool as `agentId`; resolves to its result. */
const call = async (agentId: string, name: string, args: unknown = {}): Promise<Loose> => {
  const res = await api.call(api.keyA, agentId, [{ id: `c${++n}`, name, arguments: args }]);
  expect(res.status, res.text).toBe(200);
  return res.json.results[0];
};
const ok = async (agentId: string, name: string, args: unknown = {}): Promise<Loose> => {
  const result = await call(agentId, name, args);
  expect(result.ok, JSON.stringify(result.error)).toBe(true);
  return result.value;
};
const get = async (path: string): Promise<Loose> => (await api.request(api.keyA, 'GET', path)).json;
const toolsOf = async (id: string): Promise<string[]> =>
  (await get(`/v1/agents/${id}/tools`)).tools.map((t: { name: string }) => t.name);
const pending = async (id: string): Promise<Loose[]> =>
  (await get(`/v1/agents/${id}/requests?state=pending`)).requests;
const events = async (id: string): Promise<Loose[]> => (await get(`/v1/agents/${id}/events`)).events;

describe('child agents and teams', () => {
  it('a lead spawns teammates that message, wait, report, get woken and interrupted', async () => {
    api = await makeApi();
    const lead = await api.createAgent(api.keyA, { teams: true, remoteTools: [hold] });
    expect(await toolsOf(lead.id)).toEqual(
      expect.arrayContaining([
        'spawn_teammate',
        'list_agents',
        'send_message',
        'followup_task',
        'wait_agent',
      ]),
    );
    expect(await toolsOf(lead.id)).not.toContain('report');

    const alice = await ok(lead.id, 'spawn_teammate', {
      name: 'alice',
      description: 'Reads the code',
      prompt: 'Find the parser.',
    });
    const bob = await ok(lead.id, 'spawn_teammate', {
      name: 'bob',
      description: 'Tests',
      prompt: 'Run tests.',
    });
    expect(alice).toMatchObject({ name: 'alice', status: 'running' });
    const runs = await pending(lead.id);
    expect(runs.map((r) => [r.kind, r.payload.agentId, r.payload.role, r.payload.name])).toEqual([
      ['subagent', alice.agent_id, 'teammate', 'alice'],
      ['subagent', bob.agent_id, 'teammate', 'bob'],
    ]);
    expect(runs[0].payload).toMatchObject({
      prompt: 'Find the parser.',
      tools: `/v1/agents/${alice.agent_id}/tools`,
    });
    // A teammate is an agent of its own: its tools (the team's, report, the lead's remote tools), no spawning.
    const aliceTools = await toolsOf(alice.agent_id);
    expect(runs[0].payload.toolNames).toEqual(aliceTools);
    expect(aliceTools).toEqual(
      expect.arrayContaining(['report', 'send_message', 'wait_agent', 'hold', 'bash']),
    );
    expect(aliceTools).not.toContain('spawn_teammate');
    expect(await get(`/v1/agents/${alice.agent_id}`)).toMatchObject({
      parentId: lead.id,
      teamId: lead.id,
      name: 'alice',
      role: 'teammate',
      depth: 1,
    });

    // wait_agent wakes on a teammate's message.
    const waiting = call(lead.id, 'wait_agent', { timeout_ms: 60_000 });
    await until(async () => (await get(`/v1/agents/${lead.id}`)) && api.agents.inFlight() > 0);
    await ok(alice.agent_id, 'send_message', { target: 'lead', message: 'parser is in src/parse.ts' });
    const woke = (await waiting).value;
    expect(woke).toMatchObject({
      timed_out: false,
      messages: [{ from: alice.agent_id, from_name: 'alice' }],
    });
    expect(woke.messages[0].message).toBe('parser is in src/parse.ts');
    // Delivered once: the next wait times out empty.
    expect(await ok(lead.id, 'wait_agent', { timeout_ms: 0 })).toEqual({ messages: [], timed_out: true });

    // list_agents shows the truth.
    const listed = (await ok(lead.id, 'list_agents')).agents;
    expect(listed.map((a: Loose) => [a.name, a.role, a.status])).toEqual([
      ['lead', 'self', undefined],
      ['alice', 'teammate', 'running'],
      ['bob', 'teammate', 'running'],
    ]);

    // report settles alice's run: the lead's request is answered and an event says so.
    await ok(alice.agent_id, 'report', { output: 'Found it.' });
    const finished = (await events(lead.id)).filter((e) => e.type === 'agent.child_finished');
    expect(finished.map((e) => e.data)).toEqual([
      { agentId: alice.agent_id, name: 'alice', status: 'completed', output: 'Found it.' },
    ]);
    expect((await pending(lead.id)).map((r) => r.payload.agentId)).toEqual([bob.agent_id]);

    // followup_task wakes the idle alice (a wake-up request on her own session).
    expect(await ok(lead.id, 'followup_task', { target: 'alice', message: 'Now fix it.' })).toMatchObject({
      agent_id: alice.agent_id,
      woke: true,
    });
    const [wake] = await pending(alice.agent_id);
    expect(wake).toMatchObject({
      kind: 'agent_wakeup',
      payload: { message: 'Now fix it.', reason: 'followup' },
    });
    // send_message does not wake: bob is running anyway, and its message waits in its mailbox.
    expect(await ok(lead.id, 'send_message', { target: 'bob', message: 'FYI' })).toMatchObject({
      woke: false,
    });
    expect((await get(`/v1/agents/${bob.agent_id}/mailbox`)).messages.map((m: Loose) => m.message)).toEqual([
      'FYI',
    ]);

    // interrupt_agent cancels bob's call in flight and tells its client.
    const held = call(bob.agent_id, 'hold');
    await until(async () => (await pending(bob.agent_id)).some((r) => r.kind === 'remote_tool'));
    expect(await ok(lead.id, 'interrupt_agent', { target: 'bob' })).toEqual({
      agent_id: bob.agent_id,
      interrupted_batches: 1,
    });
    expect(await held).toMatchObject({
      ok: false,
      error: { code: 'ABORTED', message: expect.stringMatching(/interrupted/) },
    });
    expect(
      (await events(bob.agent_id)).some((e) => e.type === 'agent.interrupted' && e.data.by === lead.id),
    ).toBe(true);
  });

  it('a foreground subagent waits for its report; a fork starts from the parent conversation', async () => {
    api = await makeApi();
    const parent = await api.createAgent(api.keyA, { subagents: true });
    expect(await toolsOf(parent.id)).toEqual(
      expect.arrayContaining(['subagent', 'subagent_fork', 'list_agents', 'send_message', 'interrupt_agent']),
    );
    expect(await toolsOf(parent.id)).not.toContain('wait_agent');
    const appended = await api.request(api.keyA, 'POST', `/v1/agents/${parent.id}/messages`, {
      messages: [
        { role: 'user', content: 'The release codename is BLUEFIN.' },
        { role: 'assistant', content: [{ type: 'text', text: 'Noted.' }] },
      ],
    });
    expect(appended.status, appended.text).toBe(201);
    expect(appended.json.events.map((e: Loose) => e.type)).toEqual(['message.user', 'message.assistant']);

    const waiting = call(parent.id, 'subagent', { description: 'Check', prompt: 'Check the build.' });
    const [run] = await until(() => pending(parent.id).then((r) => r.length > 0 && r));
    expect(run.payload).toMatchObject({ context: 'fresh', background: false, role: 'child' });
    await ok(run.payload.agentId, 'report', { output: 'The build is green.' });
    expect((await waiting).value).toEqual({
      agent_id: run.payload.agentId,
      status: 'completed',
      output: 'The build is green.',
    });

    const forked = await ok(parent.id, 'subagent_fork', {
      description: 'Release',
      prompt: 'Announce it.',
      run_in_background: true,
    });
    const copied = (await events(forked.agent_id)).filter((e) => e.type.startsWith('message.'));
    expect(copied.map((e) => e.data.content)).toEqual([
      'The release codename is BLUEFIN.',
      [{ type: 'text', text: 'Noted.' }],
    ]);
    expect(copied[0].data.forkedFrom).toEqual({ sessionId: parent.id, seq: appended.json.events[0].seq });

    // list_agents (scope) and the API show both children; send_message wakes the finished one.
    expect((await ok(parent.id, 'list_agents')).agents.map((a: Loose) => a.status)).toEqual([
      'completed',
      'running',
    ]);
    expect(
      await ok(parent.id, 'send_message', { subagent_id: run.payload.agentId, message: 'One more thing.' }),
    ).toMatchObject({ woke: true });
    expect((await get(`/v1/agents/${parent.id}/children`)).agents.map((a: Loose) => a.status)).toEqual([
      'running',
      'running',
    ]);
    // Another agent's children are out of reach.
    const stranger = await api.createAgent(api.keyA, { subagents: true });
    expect(await call(stranger.id, 'interrupt_agent', { agent_id: run.payload.agentId })).toMatchObject({
      ok: false,
      error: { code: 'NOT_FOUND' },
    });
  });

  it('concurrent spawns in separate batches cannot both take the last running slot or the same name', async () => {
    api = await makeApi({}, { agents: { children: { limits: { concurrentChildren: 2 } } } });
    const parent = await api.createAgent(api.keyA, { subagents: true });
    const spawn = { description: 'd', prompt: 'p', run_in_background: true };
    const results = await Promise.all([1, 2, 3, 4].map(() => call(parent.id, 'subagent', spawn)));
    expect(results.filter((r) => r.ok)).toHaveLength(2);
    expect(results.filter((r) => !r.ok).map((r) => r.error.code)).toEqual([
      'CHILD_LIMIT_EXCEEDED',
      'CHILD_LIMIT_EXCEEDED',
    ]);
    expect(results.find((r) => !r.ok).error.data).toEqual({ limit: 'concurrent', max: 2 });

    const lead = await api.createAgent(api.keyA, { teams: true });
    const twins = await Promise.all(
      [1, 2].map(() => call(lead.id, 'spawn_teammate', { name: 'twin', description: 'd', prompt: 'p' })),
    );
    expect(twins.map((r) => (r.ok ? 'ok' : r.error.code)).sort()).toEqual(['CONFLICT', 'ok']);
  });

  it('followups sent at once to an idle teammate wake it once', async () => {
    api = await makeApi();
    const lead = await api.createAgent(api.keyA, { teams: true });
    const alice = await ok(lead.id, 'spawn_teammate', { name: 'alice', description: 'd', prompt: 'p' });
    await ok(alice.agent_id, 'report', { output: 'done' }); // her run is over: she is idle
    const sent = await Promise.all(
      ['one', 'two', 'three'].map((message) => ok(lead.id, 'followup_task', { target: 'alice', message })),
    );
    expect(sent.filter((r) => r.woke)).toHaveLength(1);
    expect((await pending(alice.agent_id)).map((r) => r.kind)).toEqual(['agent_wakeup']);
  });

  it('refuses past the limits with stable codes', async () => {
    // Known once the harness made its tenants (limitsOf is synchronous).
    let tenantB: string | undefined;
    api = await makeApi(
      {},
      {
        agents: {
          children: {
            limits: { childrenPerAgent: 2, maxDepth: 1, mailboxSize: 2, messageBytes: 300 },
            // A tenant's own maxima replace the service's.
            limitsOf: (tenantId) => (tenantId === tenantB ? { childrenPerAgent: 1 } : undefined),
          },
        },
      },
    );
    tenantB = (await api.store.tenants.verifyKey(api.keyB))?.id;
    const parent = await api.createAgent(api.keyA, { subagents: true });
    const spawn = { description: 'd', prompt: 'p', run_in_background: true };
    const first = await ok(parent.id, 'subagent', spawn);
    await ok(parent.id, 'subagent', spawn);
    expect(await call(parent.id, 'subagent', spawn)).toMatchObject({
      ok: false,
      error: { code: 'CHILD_LIMIT_EXCEEDED', data: { limit: 'children', max: 2 } },
    });
    const other = await api.createAgent(api.keyB, { subagents: true });
    const inB = (body: unknown) =>
      api.call(api.keyB, other.id, [{ id: `b${++n}`, name: 'subagent', arguments: body }]);
    expect((await inB(spawn)).json.results[0].ok).toBe(true);
    expect((await inB(spawn)).json.results[0]).toMatchObject({
      ok: false,
      error: { code: 'CHILD_LIMIT_EXCEEDED', data: { limit: 'children', max: 1 } },
    });
    expect(await call(first.agent_id, 'subagent', spawn)).toMatchObject({
      ok: false,
      error: { code: 'CHILD_LIMIT_EXCEEDED', data: { limit: 'depth', max: 1 } },
    });
    const to = { subagent_id: first.agent_id, message: 'x' };
    await ok(parent.id, 'send_message', to);
    await ok(parent.id, 'send_message', to);
    expect(await call(parent.id, 'send_message', to)).toMatchObject({
      ok: false,
      error: { code: 'MAILBOX_FULL' },
    });
    expect(await call(parent.id, 'send_message', { ...to, message: 'y'.repeat(301) })).toMatchObject({
      ok: false,
      error: { code: 'PAYLOAD_TOO_LARGE' },
    });
  });

  it('deleting a parent deletes its children and cancels their pending work', async () => {
    api = await makeApi();
    const parent = await api.createAgent(api.keyA, { subagents: true });
    const child = await ok(parent.id, 'subagent', { description: 'd', prompt: 'p', run_in_background: true });
    const grandchild = await ok(child.agent_id, 'subagent', {
      description: 'd',
      prompt: 'p',
      run_in_background: true,
    });
    await ok(parent.id, 'send_message', { subagent_id: grandchild.agent_id, message: 'hello' });
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${parent.id}`)).status).toBe(204);
    for (const id of [parent.id, child.agent_id, grandchild.agent_id])
      expect((await api.request(api.keyA, 'GET', `/v1/agents/${id}`)).status).toBe(404);
    expect(await api.store.requests.list(parent.id, 'pending')).toEqual([]);
    expect(await api.store.requests.list(child.agent_id, 'pending')).toEqual([]);
    expect(await api.store.teams.undelivered(grandchild.agent_id)).toEqual([]);
  });

  it('a service rebuilt on the same store loses no child, message, link or pending run', async () => {
    api = await makeApi();
    const lead = await api.createAgent(api.keyA, { teams: true });
    const mate = await ok(lead.id, 'spawn_teammate', { name: 'carol', description: 'd', prompt: 'p' });
    await ok(mate.agent_id, 'send_message', { target: 'lead', message: 'before the restart' });
    await api.agents.close(0);

    // A new service and app on the same store, as after a control-plane restart.
    const registry = createRegistry({
      log: api.store.events,
      approvals: createRequestApprovals(api.store.requests),
    });
    for (const tool of standardSandboxTools()) registry.global.register(tool);
    const agents = createAgentService({ store: api.store, registry, sandboxes: createMemoryProvider() });
    const app = createApp({ startedAt: Date.now(), version: 'test', store: api.store, agents });
    const again = async (method: string, path: string, body?: unknown): Promise<Loose> => {
      const res = await app.request(path, {
        method,
        headers: { Authorization: `Bearer ${api.keyA}`, 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return res.json();
    };
    try {
      expect((await again('GET', `/v1/agents/${lead.id}/children?scope=team`)).agents).toMatchObject([
        { name: 'lead', role: 'self' },
        { agent_id: mate.agent_id, name: 'carol', status: 'running' },
      ]);
      const waited = await again('POST', `/v1/agents/${lead.id}/calls`, {
        calls: [{ id: 'w', name: 'wait_agent', arguments: { timeout_ms: 0 } }],
      });
      expect(waited.results[0].value.messages.map((m: Loose) => m.message)).toEqual(['before the restart']);
      // The run request is watched again: answering it settles the run.
      const [run] = (await again('GET', `/v1/agents/${lead.id}/requests?state=pending`)).requests;
      await again('POST', `/v1/agents/${lead.id}/requests/${run.id}`, { result: 'all done' });
      await until(async () => {
        const list = (await again('GET', `/v1/agents/${lead.id}/children`)).agents;
        return list[0]?.status === 'completed' && list;
      });
      const log = (await again('GET', `/v1/agents/${lead.id}/events`)).events;
      expect(log.find((e: Loose) => e.type === 'agent.child_finished')?.data).toMatchObject({
        output: 'all done',
      });
    } finally {
      await agents.close(0);
    }
  });
});

describe('workspaces', () => {
  it("children work in their parent's workspace, or in a copy of it with childWorkspace: isolated", async () => {
    api = await makeApi();
    const spawn = { description: 'd', prompt: 'p', run_in_background: true };
    const write = (id: string, file: string, content: string) =>
      ok(id, 'write', { file_path: file, content });
    const read = async (id: string, file: string) =>
      (await call(id, 'read', { file_path: file })).content[0].text;

    const shared = await api.createAgent(api.keyA, { subagents: true });
    await write(shared.id, 'plan.md', 'shared plan');
    const helper = await ok(shared.id, 'subagent', spawn);
    expect(await read(helper.agent_id, 'plan.md')).toContain('shared plan');
    await write(helper.agent_id, 'done.md', 'by the child');
    expect(await read(shared.id, 'done.md')).toContain('by the child');
    // The child has no sandbox of its own: deleting it could never remove its parent's.
    expect((await api.store.agents.byId(helper.agent_id))?.sandboxId).toBeUndefined();

    const isolating = await api.createAgent(api.keyA, { subagents: true, childWorkspace: 'isolated' });
    await write(isolating.id, 'plan.md', 'isolated plan');
    const copy = await ok(isolating.id, 'subagent', spawn);
    expect(await read(copy.agent_id, 'plan.md')).toContain('isolated plan');
    await write(copy.agent_id, 'draft.md', 'only in the copy');
    expect((await call(isolating.id, 'read', { file_path: 'draft.md' })).error.code).toBe('FILE_NOT_FOUND');
    expect((await get(`/v1/agents/${copy.agent_id}`)).config).toMatchObject({ isolatedWorkspace: true });
    // Deleting the isolated child removes its own sandbox, never its parent's.
    await api.request(api.keyA, 'DELETE', `/v1/agents/${copy.agent_id}`);
    expect(await read(isolating.id, 'plan.md')).toContain('isolated plan');
  });
});

describe('a child made while its parent is deleted', () => {
  // The child's row is held back until the parent's deletion has listed its family (the row then
  // races the parent's stamp), or until the stamp is taken: either way the child goes with it.
  for (const until_ of ['listed', 'stamped'] as const)
    it(`does not outlive the parent (its row stored once the family was ${until_})`, async () => {
      api = await makeApi();
      const parent = await api.createAgent(api.keyA, { subagents: true });
      const agents = api.store.agents;
      const create = agents.create.bind(agents);
      const children = agents.children.bind(agents);
      const { promise: creating, resolve: reached } = Promise.withResolvers<void>();
      const { promise: released, resolve: release } = Promise.withResolvers<void>();
      agents.create = async (input) => {
        if (input.links?.parentId === parent.id) {
          reached();
          await released;
        }
        return create(input);
      };
      agents.children = async (tenantId, id) => {
        const listed = await children(tenantId, id);
        if (until_ === 'listed' && id === parent.id) release();
        return listed;
      };
      const spawned = call(parent.id, 'subagent', { description: 'd', prompt: 'p', run_in_background: true });
      await creating;
      const deleted = api.request(api.keyA, 'DELETE', `/v1/agents/${parent.id}`);
      if (until_ === 'stamped') {
        await until(async () => (await agents.get(api.tenantA, parent.id)) === undefined, {
          what: 'the parent stamped deleted',
        });
        release();
      }
      expect((await deleted).status).toBe(204);
      expect((await spawned).ok).toBe(false);
      const made = (await agents.listAll({ includeDeleted: true })).filter(
        (record) => record.links?.parentId === parent.id,
      );
      expect(made.length).toBe(1);
      expect(made[0]?.deletedAt).toBeDefined();
      expect((await get('/v1/agents')).agents.map((a: Loose) => a.id)).not.toContain(made[0]?.id);
    });
});

describe("a child's run recorded while its parent is deleted", () => {
  // The spawn made the child (stored before the parent's deletion listed the family, so deleted
  // with it), then its run request is held back until the parent's DELETE answered: the request
  // and the run land after the deletion's sweep.
  it('leaves no run request pending and no run running', async () => {
    api = await makeApi({}, { agents: { deleteGraceMs: 100 } });
    const parent = await api.createAgent(api.keyA, { subagents: true });
    const requests = api.store.requests;
    const create = requests.create.bind(requests);
    const { promise: creating, resolve: reached } = Promise.withResolvers<void>();
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    let stored: Promise<unknown> | undefined;
    requests.create = (input) => {
      if (input.sessionId !== parent.id || input.kind !== 'subagent') return create(input);
      reached();
      stored = released.then(() => create(input));
      return stored as ReturnType<typeof create>;
    };
    const spawned = call(parent.id, 'subagent', { description: 'd', prompt: 'p', run_in_background: true });
    await creating;
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${parent.id}`)).status).toBe(204);
    release();
    expect((await spawned).ok).toBe(false);
    await stored;
    const [child] = (await api.store.agents.listAll({ includeDeleted: true })).filter(
      (record) => record.links?.parentId === parent.id,
    );
    expect(child?.deletedAt).toBeDefined();
    await until(
      async () =>
        (await requests.list(parent.id, 'pending')).length === 0 &&
        (await api.store.teams?.run(child?.id ?? ''))?.status !== 'running',
      { what: "the late run request cancelled and the child's run ended" },
    );
  });
});

describe('a message sent while its target is deleted', () => {
  // The message is held back until the target's DELETE answered: the mail, the wake-up request
  // and the run it restarts land after the deletion's sweep.
  it('leaves no mail unread, no wake-up pending and no run running', async () => {
    api = await makeApi();
    const parent = await api.createAgent(api.keyA, { subagents: true });
    const child = await ok(parent.id, 'subagent', { description: 'd', prompt: 'p', run_in_background: true });
    const teams = api.store.teams!;
    const post = teams.post.bind(teams);
    const { promise: posting, resolve: reached } = Promise.withResolvers<void>();
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    teams.post = async (item, max) => {
      if (item.agentId === child.agent_id) {
        reached();
        await released;
      }
      return post(item, max);
    };
    const sent = call(parent.id, 'send_message', { subagent_id: child.agent_id, message: 'continue' });
    await posting;
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${child.agent_id}`)).status).toBe(204);
    release();
    const result = await sent;
    expect(result.ok).toBe(false);
    expect(result.error.code).toBe('NOT_FOUND');
    expect(await teams.undelivered(child.agent_id)).toEqual([]);
    expect(await api.store.requests.list(child.agent_id, 'pending')).toEqual([]);
    expect((await teams.run(child.agent_id))?.status).not.toBe('running');
  });
});

describe("a child's report posted while its parent is deleted", () => {
  // The child's report read its parent live; its post into the parent's mailbox is held back
  // until the parent's deletion cancelled the parent's unread mail.
  it('leaves no unread mail in the deleted parent', async () => {
    api = await makeApi();
    const parent = await api.createAgent(api.keyA, { subagents: true });
    const child = await ok(parent.id, 'subagent', { description: 'd', prompt: 'p', run_in_background: true });
    const teams = api.store.teams!;
    const post = teams.post.bind(teams);
    const cancelPending = teams.cancelPending.bind(teams);
    const { promise: posting, resolve: reached } = Promise.withResolvers<void>();
    const { promise: sweep, resolve: swept } = Promise.withResolvers<void>();
    let stored: Promise<unknown> | undefined;
    teams.post = (item, max) => {
      if (item.agentId !== parent.id || item.kind !== 'report') return post(item, max);
      reached();
      stored = sweep.then(() => post(item, max));
      return stored as ReturnType<typeof post>;
    };
    teams.cancelPending = async (agentId) => {
      const cancelled = await cancelPending(agentId);
      if (agentId === parent.id) swept();
      return cancelled;
    };
    const reported = call(child.agent_id, 'report', { output: 'done' });
    await posting;
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${parent.id}`)).status).toBe(204);
    await reported;
    await stored;
    await until(async () => (await teams.undelivered(parent.id)).length === 0, {
      what: 'the late report cancelled',
    });
  });
});
