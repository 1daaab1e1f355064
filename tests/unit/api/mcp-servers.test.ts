// MCP servers as an agent's tool sources (issue 14): a stdio server registered over the API runs
// on pipes a real (local) sandboxd owns, with the control plane as the MCP client (the official
// SDK's Client over our transport). Its tools become mcp__<server>__<tool> tools of the agent,
// validated, governed by policy and logged like any other; a server that crashes, hangs, sends
// garbage or too much fails its own calls with a stable code and starts again at the next call,
// and one that keeps failing is marked failed. tests/integration/api/mcp-servers.test.ts runs the
// reference server in a real container.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import type { SandboxProvider } from '../../../host/sandbox/types.ts';
import { until } from '../../helpers/until.ts';
import { gone, type LocalSandboxd, startLocalSandboxd } from '../sandboxd/harness.ts';
import { type Api, type Loose, makeApi } from './harness.ts';

const TINY = join(import.meta.dirname, '..', '..', 'fixtures', 'mcp', 'tiny-server.mjs');
const tiny = (...args: string[]) => ({ name: 'tiny', command: [process.execPath, TINY, ...args] });

let sd: LocalSandboxd;
let api: Api;
/** Tenant b's id, once the harness made it (mcpLimitsOf is synchronous). */
let tenantB: string | undefined;

beforeAll(async () => {
  sd = await startLocalSandboxd();
  const client = await sd.connect();
  const memory = createMemoryProvider();
  // The memory sandbox for files, a real sandboxd for programs on pipes.
  const withStdio = <T extends object>(s: T | undefined) => s && { ...s, stdio: client.stdio };
  const sandboxes: SandboxProvider = {
    ...memory,
    flags: { ...memory.flags, stdio: true },
    create: async (spec) => withStdio(await memory.create(spec)) as never,
    get: async (id) => withStdio(await memory.get(id)),
  };
  api = await makeApi(
    {},
    {
      sandboxes,
      agents: {
        // Tenant b's servers stop after 300 ms without a call.
        mcpLimitsOf: (tenantId) => ({
          maxServers: 2,
          maxResultBytes: 64 * 1024,
          ...(tenantId === tenantB ? { idleMs: 300 } : {}),
        }),
      },
    },
  );
  tenantB = (await api.store.tenants.verifyKey(api.keyB))?.id;
});

afterAll(async () => {
  await api?.close();
  await sd?.stop();
});

const register = (agentId: string, body: unknown, key = api.keyA) =>
  api.request(key, 'POST', `/v1/agents/${agentId}/mcp-servers`, body);
const callOne = async (agentId: string, name: string, args: unknown = {}, key = api.keyA): Promise<Loose> =>
  (await api.call(key, agentId, [{ id: 'c1', name, arguments: args }])).json.results[0];

describe('MCP servers as tool sources', () => {
  it('registers a stdio server: its tools are the agent’s, named mcp__<server>__<tool> within 64 characters', async () => {
    const agent = await api.createAgent(api.keyA);
    const res = await register(agent.id, tiny());
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({ name: 'tiny', transport: 'stdio', state: 'ready', restarts: 0 });
    const names = (res.json.tools as Loose[]).map((t) => t.name);
    expect(names).toContain('mcp__tiny__echo');
    expect(res.json.tools).toContainEqual({
      name: 'mcp__tiny__dotted_name_with_spaces',
      tool: 'dotted.name/with spaces',
    });
    expect(names.every((n: string) => /^[A-Za-z0-9_-]{1,64}$/.test(n))).toBe(true);
    expect(res.json.skipped).toEqual([]);
    const tools = (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/tools`)).json.tools as Loose[];
    expect(tools.find((t) => t.name === 'mcp__tiny__echo')).toMatchObject({
      parameters: { type: 'object', required: ['message'] },
    });
    // Another tenant sees no such agent.
    expect((await register(agent.id, tiny(), api.keyB)).status).toBe(404);
    expect((await api.request(api.keyB, 'GET', `/v1/agents/${agent.id}/mcp-servers`)).status).toBe(404);
  });

  it('calls go through the pipeline: validated, policy-checked, logged, with the server’s answer', async () => {
    const agent = await api.createAgent(api.keyA, { policy: { deny: ['mcp__tiny__add'] } });
    await register(agent.id, tiny());
    expect(await callOne(agent.id, 'mcp__tiny__echo', { message: 'hi' })).toMatchObject({
      ok: true,
      content: [{ type: 'text', text: 'echo: hi' }],
      value: { content: [{ type: 'text', text: 'echo: hi' }] },
    });
    expect((await callOne(agent.id, 'mcp__tiny__echo', { message: 3 })).error.code).toBe('INVALID_ARGUMENTS');
    expect((await callOne(agent.id, 'mcp__tiny__add', { a: 1, b: 2 })).error.code).toBe('DENIED');
    expect(await callOne(agent.id, 'mcp__tiny__fail')).toMatchObject({
      ok: false,
      error: { code: 'TOOL_FAILED', message: 'it went wrong on purpose' },
    });
    // Lines that are not JSON-RPC are skipped, the answer still arrives.
    expect((await callOne(agent.id, 'mcp__tiny__garbage')).content).toEqual([
      { type: 'text', text: 'after garbage' },
    ]);
    // The program gets none of sandboxd's own settings. (This sandboxd runs on the test machine and
    // inherits the test's environment; in a container it has only what the provider gives it, and
    // tests/integration/api/mcp-servers.test.ts runs the server there.)
    const env = (await callOne(agent.id, 'mcp__tiny__env')).content[0].text as string;
    expect(env).toContain('PATH');
    expect(env).not.toContain('SANDBOXD_');
    const events = (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`)).json
      .events as Loose[];
    expect(events.some((e) => e.type === 'agent.mcp_servers')).toBe(true);
    expect(events.some((e) => e.type === 'tool.call' && e.data?.name === 'mcp__tiny__echo')).toBe(true);
  });

  it('a server that crashes, hangs or floods fails only its own call, then starts again', async () => {
    const agent = await api.createAgent(api.keyA);
    await register(agent.id, { ...tiny(), timeoutMs: 500 });
    const pid = Number((await callOne(agent.id, 'mcp__tiny__pid')).content[0].text);

    const crashed = await callOne(agent.id, 'mcp__tiny__crash');
    expect(crashed.error.code).toBe('MCP_SERVER_FAILED');
    expect(crashed.error.message).toContain('crashing as asked');
    await until(() => gone(pid), { what: 'the crashed server is gone' });
    expect((await callOne(agent.id, 'mcp__tiny__echo', { message: 'again' })).ok).toBe(true);

    const hung = await callOne(agent.id, 'mcp__tiny__hang');
    expect(hung.error.code).toBe('TOOL_TIMEOUT');
    expect((await callOne(agent.id, 'mcp__tiny__echo', { message: 'after hang' })).ok).toBe(true);

    const flood = await callOne(agent.id, 'mcp__tiny__huge', { n: 200 * 1024 });
    expect(flood.error).toMatchObject({
      code: 'MCP_SERVER_FAILED',
      message: expect.stringContaining('over'),
    });
    expect((await callOne(agent.id, 'mcp__tiny__echo', { message: 'after flood' })).ok).toBe(true);

    const status = (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/mcp-servers/tiny`)).json;
    expect(status).toMatchObject({ state: 'ready', restarts: 3 });
  });

  it('a server that keeps failing is marked failed, and says why', async () => {
    const agent = await api.createAgent(api.keyA);
    mkdirSync(join(sd.root, 'poison-here'));
    expect((await register(agent.id, { ...tiny(), cwd: 'poison-here' })).status).toBe(201);
    expect((await callOne(agent.id, 'mcp__tiny__poison')).error.code).toBe('MCP_SERVER_FAILED');
    // Two more failed starts make three failures in a row.
    for (let i = 0; i < 2; i++)
      expect((await callOne(agent.id, 'mcp__tiny__echo', { message: 'x' })).error.code).toBe(
        'MCP_SERVER_FAILED',
      );
    const status = (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/mcp-servers/tiny`)).json;
    expect(status).toMatchObject({
      state: 'failed',
      lastError: expect.stringContaining('told to exit at start'),
    });
    const refused = await callOne(agent.id, 'mcp__tiny__echo', { message: 'x' });
    expect(refused.error).toMatchObject({
      code: 'MCP_SERVER_FAILED',
      message: expect.stringContaining('marked failed'),
    });
  });

  it('a server that does not start is refused with its stderr, and nothing is kept', async () => {
    const agent = await api.createAgent(api.keyA);
    const res = await register(agent.id, tiny('--exit-at-start'));
    expect(res.status).toBe(502);
    expect(res.json.error).toMatchObject({
      code: 'MCP_SERVER_FAILED',
      message: expect.stringContaining('told to exit at start'),
    });
    expect((await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/mcp-servers`)).json.servers).toEqual(
      [],
    );
  });

  it('one malformed tool in a listing is skipped with its reason; the server’s other tools stay usable', async () => {
    const agent = await api.createAgent(api.keyA);
    const res = await register(agent.id, tiny('--bad-schema'));
    expect(res.status).toBe(201);
    expect(res.json.skipped).toEqual([
      { tool: 'bad-schema', reason: expect.stringContaining('not a valid MCP tool (inputSchema.type') },
      { tool: 'no-name', reason: expect.stringContaining('not a valid MCP tool') },
      { tool: '#16', reason: expect.stringContaining('not a valid MCP tool (name') },
    ]);
    const names = (res.json.tools as Loose[]).map((t) => t.name);
    expect(names).toContain('mcp__tiny__echo');
    expect(names.some((n: string) => n.includes('bad'))).toBe(false);
    const echo = await callOne(agent.id, 'mcp__tiny__echo', { message: 'still here' });
    expect(echo).toMatchObject({ ok: true, content: [{ type: 'text', text: 'echo: still here' }] });
  });

  it('limits: servers per agent; removing a server ends it and its tools', async () => {
    const agent = await api.createAgent(api.keyA);
    expect((await register(agent.id, { ...tiny(), name: 'one' })).status).toBe(201);
    // 14 tools of its own and 60 more: the tenant's 64 are taken, the rest are listed as skipped.
    const two = await register(agent.id, { ...tiny('--tools', '60'), name: 'two' });
    expect(two.status).toBe(201);
    expect(two.json.tools.length).toBe(64);
    expect(two.json.skipped).toEqual(
      Array.from({ length: 10 }, (_, i) => ({ tool: `t${50 + i}`, reason: 'over 64 tools' })),
    );
    const third = await register(agent.id, { ...tiny(), name: 'three' });
    expect(third.json.error.code).toBe('LIMIT_EXCEEDED');
    expect((await register(agent.id, { ...tiny(), name: 'bad_name' })).status).toBe(400);
    const pid = Number((await callOne(agent.id, 'mcp__one__pid')).content[0].text);
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}/mcp-servers/one`)).status).toBe(
      204,
    );
    await until(() => gone(pid), { what: 'the removed server is gone' });
    expect((await callOne(agent.id, 'mcp__one__echo', { message: 'x' })).error.code).toBe('UNKNOWN_TOOL');
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}/mcp-servers/one`)).status).toBe(
      404,
    );
  });

  it('a server that announces new tools has them added (and logged)', async () => {
    const agent = await api.createAgent(api.keyA);
    await register(agent.id, tiny());
    expect((await callOne(agent.id, 'mcp__tiny__grow')).ok).toBe(true);
    await until(
      async () =>
        ((await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/tools`)).json.tools as Loose[]).some(
          (t) => t.name === 'mcp__tiny__grown',
        ),
      { what: 'the announced tool' },
    );
    expect((await callOne(agent.id, 'mcp__tiny__grown')).content[0].text).toBe('called grown');
    const events = (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`)).json
      .events as Loose[];
    expect(events.filter((e) => e.type === 'agent.mcp_servers').length).toBe(2);
  });

  it('a server without calls for idleMs is stopped, and starts again at the next call', async () => {
    const agent = await api.createAgent(api.keyB);
    expect((await register(agent.id, tiny(), api.keyB)).status).toBe(201);
    const pid = Number((await callOne(agent.id, 'mcp__tiny__pid', {}, api.keyB)).content[0].text);
    await until(() => gone(pid), { what: 'the idle server is stopped' });
    const status = (await api.request(api.keyB, 'GET', `/v1/agents/${agent.id}/mcp-servers/tiny`)).json;
    expect(status.state).toBe('stopped');
    expect(status.lastError).toBeUndefined();
    expect((await callOne(agent.id, 'mcp__tiny__echo', { message: 'awake' }, api.keyB)).ok).toBe(true);
  });

  it('deleting the agent ends its servers', async () => {
    const agent = await api.createAgent(api.keyA);
    await register(agent.id, tiny());
    const pid = Number((await callOne(agent.id, 'mcp__tiny__pid')).content[0].text);
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    await until(() => gone(pid), { what: 'the server is gone with its agent' });
  });
});
