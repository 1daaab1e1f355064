// Child agents and Agent Teams over real HTTP, real containers and the real isolate host, with the
// test playing the client of every agent (it calls tools as the lead and as each teammate). A lead
// spawns two teammates, who work in its workspace and on its task board (a claimed task's write
// scope holds); messages flow and wait_agent wakes on one;
// list_agents tells the truth; interrupt_agent cancels a teammate's running `sleep 30`; a restart
// of the control plane in the middle loses no child, message or link; a child started with
// subagent_fork finds its parent's earlier messages with the session tools; deleting the lead
// deletes its team.
import { expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json, served } from './served.ts';

const service = served('teams', { shutdownGraceMs: 300 });

let server: Running;
let key: string;

const http = async (method: string, path: string, body?: unknown): Promise<Loose> => {
  const res = await json(server, key, method, path, body);
  expect(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.json)}`).toBe(true);
  return res.json;
};

let n = 0;
/** One tool call as `agentId` (the client running that agent's loop); resolves to its result. */
const call = async (agentId: string, name: string, args: unknown = {}): Promise<Loose> =>
  (await http('POST', `/v1/agents/${agentId}/calls`, { calls: [{ id: `c${++n}`, name, arguments: args }] }))
    .results[0];
const ok = async (agentId: string, name: string, args: unknown = {}): Promise<Loose> => {
  const result = await call(agentId, name, args);
  expect(result.ok, `${name}: ${JSON.stringify(result.error)}`).toBe(true);
  return result.value;
};
const bash = (agentId: string, command: string) => call(agentId, 'bash', { command, description: command });
const pending = async (agentId: string): Promise<Loose[]> =>
  (await http('GET', `/v1/agents/${agentId}/requests?state=pending`)).requests;

it('plays the client of a lead and two teammates, across a restart', async () => {
  server = await service.start();
  key = (await server.store.tenants.createTenant('teams')).apiKey;

  const lead = await http('POST', '/v1/agents', { teams: true, subagents: true });
  await http('POST', `/v1/agents/${lead.id}/messages`, {
    messages: [
      { role: 'user', content: 'Ship the release; its codename is BLUEFIN.' },
      { role: 'assistant', content: 'I will split the work between two teammates.' },
    ],
  });
  const alice = await ok(lead.id, 'spawn_teammate', {
    name: 'alice',
    description: 'Writes the notes',
    prompt: 'Write the release notes.',
  });
  const bob = await ok(lead.id, 'spawn_teammate', {
    name: 'bob',
    description: 'Tests',
    prompt: 'Run the tests.',
  });
  // The client learns what to run from the lead's pending requests.
  const runs = await pending(lead.id);
  expect(runs.map((r) => [r.kind, r.payload.name, r.payload.agentId])).toEqual([
    ['subagent', 'alice', alice.agent_id],
    ['subagent', 'bob', bob.agent_id],
  ]);

  // Teammates work in the lead's workspace.
  expect((await bash(alice.agent_id, 'echo "notes v1" > NOTES.md')).ok).toBe(true);
  expect((await bash(lead.id, 'cat NOTES.md')).content[0].text).toContain('notes v1');

  // The team shares the lead's task board: alice claims a ready task and is held to its scope.
  const docs = await ok(lead.id, 'team_task_create', {
    subject: 'Release notes',
    description: 'Write them under docs/',
    write_scopes: ['docs'],
  });
  const ready = await ok(alice.agent_id, 'team_task_list', { ready: true });
  expect(JSON.stringify(ready)).toContain('Release notes');
  await ok(alice.agent_id, 'team_task_update', {
    task_id: docs.task_id,
    expected_revision: 1,
    action: 'claim',
  });
  await ok(alice.agent_id, 'write', { file_path: 'docs/release.md', content: '# Release\n' });
  expect(await call(alice.agent_id, 'write', { file_path: 'src/app.ts', content: 'x' })).toMatchObject({
    ok: false,
    error: { code: 'WRITE_SCOPE' },
  });
  await ok(alice.agent_id, 'team_task_update', {
    task_id: docs.task_id,
    expected_revision: 2,
    action: 'complete',
  });

  // wait_agent wakes on a teammate's message.
  const waiting = call(lead.id, 'wait_agent', { timeout_ms: 60_000 });
  await until(async () =>
    (await http('GET', `/v1/agents/${lead.id}/events`)).events.some(
      (e: Loose) => e.type === 'tool.call' && e.data.name === 'wait_agent',
    ),
  );
  await ok(alice.agent_id, 'send_message', { target: 'lead', message: 'Notes are in NOTES.md.' });
  const woke = (await waiting).value;
  expect(woke.messages.map((m: Loose) => [m.from_name, m.message])).toEqual([
    ['alice', 'Notes are in NOTES.md.'],
  ]);

  // interrupt_agent cancels bob's running bash.
  const sleeping = bash(bob.agent_id, 'sleep 30; echo woke up');
  await until(
    async () => (await ok(lead.id, 'list_agents')).agents.find((a: Loose) => a.name === 'bob')?.busy,
  );
  expect(await ok(lead.id, 'interrupt_agent', { target: 'bob' })).toEqual({
    agent_id: bob.agent_id,
    interrupted_batches: 1,
  });
  expect(await sleeping).toMatchObject({ ok: false, error: { code: 'ABORTED' } });
  const bobLog = (await http('GET', `/v1/agents/${bob.agent_id}/events`)).events;
  expect(bobLog.some((e: Loose) => e.type === 'agent.interrupted' && e.data.by === lead.id)).toBe(true);

  // alice reports; a message waits for bob; then the control plane restarts.
  await ok(alice.agent_id, 'report', { output: 'Release notes written.' });
  await ok(lead.id, 'send_message', { target: 'bob', message: 'Also run the slow tests.' });
  const before = (await ok(lead.id, 'list_agents')).agents;
  // (The lead is busy: its own list_agents call is running.)
  expect(before.map((a: Loose) => [a.name, a.role, a.status, a.busy])).toEqual([
    ['lead', 'self', undefined, true],
    ['alice', 'teammate', 'completed', false],
    ['bob', 'teammate', 'running', false],
  ]);
  await service.stop(server);
  server = await service.start();

  expect((await ok(lead.id, 'list_agents')).agents).toEqual(before);
  expect(await http('GET', `/v1/agents/${bob.agent_id}`)).toMatchObject({
    parentId: lead.id,
    teamId: lead.id,
    name: 'bob',
    role: 'teammate',
  });
  expect(
    (await ok(bob.agent_id, 'wait_agent', { timeout_ms: 0 })).messages.map((m: Loose) => m.message),
  ).toEqual(['Also run the slow tests.']);
  expect((await bash(bob.agent_id, 'cat NOTES.md')).content[0].text).toContain('notes v1');
  // bob's run request is still watched: the client's answer settles it and the lead hears of it.
  const [bobRun] = await pending(lead.id);
  await http('POST', `/v1/agents/${lead.id}/requests/${bobRun.id}`, { result: 'Tests pass.' });
  // The report follows the answer (the run settles after the answer is stored): wait until both are heard.
  const heard: Loose[] = [];
  for (let i = 0; i < 2 && heard.length < 2; i++)
    heard.push(...(await ok(lead.id, 'wait_agent', { timeout_ms: 60_000 })).messages);
  expect(heard.map((m: Loose) => [m.from_name, m.kind, m.message])).toEqual([
    ['alice', 'report', 'Release notes written.'],
    ['bob', 'report', 'Tests pass.'],
  ]);

  // A forked child reads its parent's earlier messages through the session tools.
  const forked = await ok(lead.id, 'subagent_fork', {
    description: 'Announce',
    prompt: 'Announce the release by its codename.',
    run_in_background: true,
  });
  const found = await ok(forked.agent_id, 'session_event_search', { query: 'codename BLUEFIN' });
  expect(found.session_id).toBe(forked.agent_id);
  expect(found.hits.map((h: Loose) => h.type)).toEqual(['message.user']);
  const [hit] = found.hits;
  const read = await ok(forked.agent_id, 'session_event_read', { seq: hit.seq });
  expect(JSON.stringify(read.events[0])).toContain('Ship the release; its codename is BLUEFIN.');

  // Deleting the lead deletes its team.
  await http('DELETE', `/v1/agents/${lead.id}`);
  for (const id of [alice.agent_id, bob.agent_id, forked.agent_id]) {
    const res = await fetch(`${server.url}/v1/agents/${id}`, { headers: { Authorization: `Bearer ${key}` } });
    expect(res.status).toBe(404);
  }
});

it('gives a child of childWorkspace: "isolated" its own container, seeded with a copy of the workspace', async () => {
  server = await service.current();
  key = (await server.store.tenants.createTenant('isolated')).apiKey;
  const parent = await http('POST', '/v1/agents', { subagents: true, childWorkspace: 'isolated' });
  expect((await bash(parent.id, 'mkdir -p src && echo "v1" > src/app.txt')).ok).toBe(true);
  const child = await ok(parent.id, 'subagent', { description: 'd', prompt: 'p', run_in_background: true });
  expect(
    (await bash(child.agent_id, 'cat src/app.txt && echo "v2" > src/app.txt')).content[0].text,
  ).toContain('v1');
  expect((await bash(parent.id, 'cat src/app.txt')).content[0].text).toContain('v1');
  const sandboxOf = async (id: string) => (await server.store.agents.byId(id))?.sandboxId;
  expect(await sandboxOf(child.agent_id)).toEqual(expect.any(String));
  expect(await sandboxOf(child.agent_id)).not.toBe(await sandboxOf(parent.id));
  await http('DELETE', `/v1/agents/${parent.id}`);
});
