// The client's handles for the rest of the API (issue 35), against the app in-process (memory
// sandbox provider, the session's schedules and skills): an agent's remote tools, steps, messages,
// MCP servers, plan mode, todos and goal, schedules, children and mailbox, plugins; the tenant's
// skills and egress settings. Each answers what the route answers, typed, and another tenant's
// agent is NOT_FOUND through every one of them.
import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { afterAll, describe, expect, expectTypeOf, it, onTestFinished } from 'vitest';
import { createTransport } from '../../../client/http.ts';
import {
  type ChildAgent,
  DshAgent,
  DshClient,
  DshError,
  isDshError,
  type Schedule,
  type SkillDetail,
  type Step,
  textOf,
} from '../../../client/index.ts';
import { makeApi } from '../api/harness.ts';
import { startService } from '../session/helpers.ts';

const service = startService();
const inProcess = (request: Request) => Promise.resolve(service.app.fetch(request));
const client = new DshClient({
  baseUrl: 'http://dsh.test',
  apiKey: (await service.store.tenants.createTenant('a')).apiKey,
  fetch: inProcess,
});
const strangerKey = (await service.store.tenants.createTenant('b')).apiKey;
const stranger = new DshClient({ baseUrl: 'http://dsh.test', apiKey: strangerKey, fetch: inProcess });

afterAll(async () => {
  await service.stop();
});

const tarOf = async (files: Record<string, string>): Promise<Uint8Array> => {
  const p = pack();
  for (const [name, body] of Object.entries(files)) p.entry({ name }, body);
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of Readable.from(p)) chunks.push(chunk as Buffer);
  return new Uint8Array(Buffer.concat(chunks));
};

describe('agent handles', () => {
  it('remote tools: registered, listed, in a step, called as a remote_tool request', async () => {
    const agent = await client.agents.create({ preset: 'minimal' });
    const registered = await agent.remoteTools.register([
      { name: 'ask_weather', description: 'The weather somewhere.', parameters: { type: 'object' } },
    ]);
    expect(registered).toMatchObject({ tools: ['ask_weather'] });
    expect((await agent.tools()).map((t) => t.name)).toContain('ask_weather');
    const step = await agent.step();
    expectTypeOf(step).toEqualTypeOf<Step>();
    expect(step.tools.map((t) => t.name)).toContain('ask_weather');
    const listener = agent.onRequest('remote_tool', () => ({ result: 'sunny' }));
    try {
      const result = await agent.call('ask_weather', { city: 'x' }, { step: step.stepId });
      expect(textOf(result)).toContain('sunny');
    } finally {
      await listener.stop();
    }
  });

  it("messages are appended to the agent's log", async () => {
    const agent = await client.agents.create({ preset: 'minimal' });
    const appended = await agent.messages.append([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: [{ type: 'text', text: 'hi' }] },
    ]);
    expect(appended.events.map((e) => e.type)).toEqual(['message.user', 'message.assistant']);
    const { data } = await client.api.GET('/v1/agents/{id}/events', { params: { path: { id: agent.id } } });
    expect(data?.events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['message.user', 'message.assistant']),
    );
  });

  it('plan mode on stops mutating tools; todos, goal and schedules read what the session keeps', async () => {
    const agent = await client.agents.create({ preset: 'standard' });
    expect(await agent.planMode.get()).toBe(false);
    expect(await agent.planMode.set(true)).toBe(true);
    const refused = await agent.call('write', { file_path: 'a.txt', content: 'x' }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'PLAN_MODE' });
    expect(await agent.planMode.set(false)).toBe(false);

    expect(await agent.todos()).toEqual([]);
    expect(await agent.goal()).toBeNull();
    await agent.call('todo_write', { todos: [{ content: 'ship it', status: 'in_progress' }] });
    expect(await agent.todos()).toEqual([{ content: 'ship it', status: 'in_progress' }]);
    await agent.call('create_goal', { objective: 'ship the client' });
    expect(await agent.goal()).toMatchObject({ objective: 'ship the client', state: 'active' });

    await agent.call('schedule_create', { prompt: 'check the build', after_seconds: 3600 });
    const schedules = await agent.schedules.list();
    expectTypeOf(schedules).toEqualTypeOf<Schedule[]>();
    expect(schedules).toMatchObject([{ prompt: 'check the build', kind: 'after' }]);
    await agent.schedules.delete(schedules[0]?.id ?? '');
    expect(await agent.schedules.list()).toEqual([]);
  });

  it('children, mailbox, MCP servers and plugins answer for an agent that has none', async () => {
    const agent = await client.agents.create({ preset: 'minimal' });
    const children = await agent.children('descendants');
    expectTypeOf(children).toEqualTypeOf<ChildAgent[]>();
    expect(children).toEqual([]);
    expect(await agent.mailbox.list(0)).toEqual([]);
    expect(await agent.mailbox.take()).toEqual([]);
    expect(await agent.mcpServers.list()).toEqual([]);
    const none = await agent.mcpServers.get('nope').catch((e: unknown) => e);
    expect(isDshError(none, 'NOT_FOUND')).toBe(true);
    // This service runs no plugin host: a typed NOT_FOUND that says so, not a crash.
    const plugins = await agent.plugins.list().catch((e: unknown) => e);
    expect(Array.isArray(plugins) || isDshError(plugins, 'NOT_FOUND')).toBe(true);
  });

  it("another tenant's agent is NOT_FOUND through every handle", async () => {
    const agent = await client.agents.create({ preset: 'standard' });
    // A handle on an id the caller does not own, with the stranger's key (agents.get would refuse first).
    const foreign = new DshAgent(
      createTransport({ baseUrl: 'http://dsh.test', apiKey: strangerKey, fetch: inProcess }),
      agent.info,
    );
    const attempts: Promise<unknown>[] = [
      foreign.remoteTools.register([{ name: 'x', description: 'x', parameters: { type: 'object' } }]),
      foreign.step(),
      foreign.messages.append([{ role: 'user', content: 'hi' }]),
      foreign.mcpServers.list(),
      foreign.planMode.set(true),
      foreign.todos(),
      foreign.goal(),
      foreign.schedules.list(),
      foreign.children(),
      foreign.mailbox.list(),
      foreign.mailbox.take(),
    ];
    for (const attempt of attempts)
      expect(isDshError(await attempt.catch((e: unknown) => e), 'NOT_FOUND')).toBe(true);
    expect(await agent.planMode.get()).toBe(false);
  });
});

describe('tenant handles', () => {
  it('skills: put a tar, list, get with its files, delete; another tenant sees none', async () => {
    const tar = await tarOf({
      'SKILL.md':
        '---\nname: release-notes\ndescription: "Write release notes from the git log."\n---\n# Notes\n',
      'template.md': '## Changes\n',
    });
    const put = await client.skills.put('release-notes', tar);
    expectTypeOf(put).toEqualTypeOf<SkillDetail>();
    expect(put).toMatchObject({
      name: 'release-notes',
      description: 'Write release notes from the git log.',
    });
    expect((await client.skills.list()).map((s) => s.name)).toEqual(['release-notes']);
    expect((await client.skills.get('release-notes')).files.map((f) => f.path).sort()).toEqual([
      'SKILL.md',
      'template.md',
    ]);
    expect(await stranger.skills.list()).toEqual([]);
    const theirs = await stranger.skills.get('release-notes').catch((e: unknown) => e);
    expect(theirs).toBeInstanceOf(DshError);
    expect((theirs as DshError).code).toBe('NOT_FOUND');
    const bad = await client.skills.put('broken', 'not a tar').catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(DshError);
    await client.skills.delete('release-notes');
    expect(await client.skills.list()).toEqual([]);
  });

  it('egress: put replaces the settings, get shows them (credentials by name only)', async () => {
    // A service with the egress gateway (the session helper's has none).
    const api = await makeApi({}, { egress: { testHosts: [{ ip: '127.0.0.1' }] } });
    const inApi = (request: Request) => Promise.resolve(api.app.fetch(request));
    const client = new DshClient({ baseUrl: 'http://dsh.test', apiKey: api.keyA, fetch: inApi });
    const stranger = new DshClient({ baseUrl: 'http://dsh.test', apiKey: api.keyB, fetch: inApi });
    onTestFinished(() => api.close());
    const put = await client.egress.put({
      allow: [{ host: 'api.example.com', ports: [443] }],
      credentials: [
        { name: 'api', host: 'api.example.com', header: 'Authorization', value: 'Bearer s3cret' },
      ],
    });
    expect(put.allow).toEqual([{ host: 'api.example.com', ports: [443] }]);
    const got = await client.egress.get();
    expect(got.credentials).toEqual([{ name: 'api', host: 'api.example.com', header: 'Authorization' }]);
    expect(JSON.stringify(got)).not.toContain('s3cret');
    expect((await stranger.egress.get()).allow).toEqual([]);
    const hostile = await client.egress
      .put({ allow: [{ host: 'http://bad host/' }] })
      .catch((e: unknown) => e);
    expect(isDshError(hostile, 'BAD_REQUEST')).toBe(true);
  });
});
