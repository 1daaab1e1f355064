// What a restart, a slow dependency and request ids look like to a client.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import type { SandboxProvider } from '../../../host/sandbox/types.ts';
import { openStore } from '../../../host/store/index.ts';
import { type Api, makeApi } from './harness.ts';
import { readSse } from './sse.ts';

const dirs: string[] = [];
let api: Api | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const bootApp = (dataDir: string, sandboxes: SandboxProvider, limits = {}) => {
  const store = openStore({ dataDir });
  const { agents } = assembleAgents({ store, sandboxes });
  const app = createApp({ startedAt: Date.now(), version: 'test', store, agents, limits });
  return { store, agents, app };
};

describe('restart', () => {
  it('agents, their remote tools and their event log survive a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dsh-api-restart-'));
    dirs.push(dataDir);
    const sandboxes = createMemoryProvider();
    const first = bootApp(dataDir, sandboxes);
    const { apiKey } = await first.store.tenants.createTenant('t');
    const H = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
    const agent = (await (
      await first.app.request('/v1/agents', { method: 'POST', headers: H, body: '{"preset":"minimal"}' })
    ).json()) as { id: string };
    await first.app.request(`/v1/agents/${agent.id}/remote-tools`, {
      method: 'POST',
      headers: H,
      body: JSON.stringify({
        tools: [{ name: 'client_echo', description: 'echo in the client', parameters: { type: 'object' } }],
      }),
    });
    await first.app.request(`/v1/agents/${agent.id}/calls`, {
      method: 'POST',
      headers: H,
      body: JSON.stringify({
        calls: [
          {
            id: 'c',
            name: 'str_replace_editor',
            arguments: { command: 'create', path: 'a.txt', file_text: 'hi' },
          },
        ],
      }),
    });
    await first.agents.close(0);
    first.store.close();

    const second = bootApp(dataDir, sandboxes);
    const tools = (await (
      await second.app.request(`/v1/agents/${agent.id}/tools`, { headers: H })
    ).json()) as { tools: { name: string }[] };
    expect(tools.tools.map((t) => t.name)).toEqual(['bash', 'str_replace_editor', 'client_echo']);
    const events = (await (
      await second.app.request(`/v1/agents/${agent.id}/events`, { headers: H })
    ).json()) as { events: { type: string }[] };
    expect(events.events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['agent.remote_tools', 'tool.call', 'tool.result']),
    );
    await second.agents.close(0);
    second.store.close();
  });
});

describe('restart: session state', () => {
  it("an agent's todos, goal and plan mode survive a restart", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dsh-api-session-'));
    dirs.push(dataDir);
    const sandboxes = createMemoryProvider();
    const first = bootApp(dataDir, sandboxes);
    const { apiKey } = await first.store.tenants.createTenant('t');
    const H = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
    const send = async (app: typeof first.app, method: string, path: string, body?: unknown) => {
      const init = { method, headers: H, ...(body === undefined ? {} : { body: JSON.stringify(body) }) };
      return (await (await app.request(path, init)).json()) as Record<string, unknown>;
    };
    const agent = (await send(first.app, 'POST', '/v1/agents', {})) as { id: string };
    const todos = [{ content: 'Keep me', status: 'in_progress' }];
    await send(first.app, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [
        { id: 't', name: 'todo_write', arguments: { todos } },
        { id: 'g', name: 'create_goal', arguments: { objective: 'Survive', max_goal_rounds: 3 } },
      ],
    });
    await send(first.app, 'PUT', `/v1/agents/${agent.id}/plan-mode`, { planMode: true });
    const goal = (await send(first.app, 'GET', `/v1/agents/${agent.id}/goal`)).goal;
    await first.agents.close(0);
    first.store.close();

    const second = bootApp(dataDir, sandboxes);
    expect(await send(second.app, 'GET', `/v1/agents/${agent.id}/todos`)).toEqual({ todos });
    expect(await send(second.app, 'GET', `/v1/agents/${agent.id}/goal`)).toEqual({ goal });
    expect(await send(second.app, 'GET', `/v1/agents/${agent.id}/plan-mode`)).toEqual({ planMode: true });
    const [write] = (
      (await send(second.app, 'POST', `/v1/agents/${agent.id}/calls`, {
        calls: [{ id: 'w', name: 'write', arguments: { file_path: 'a', content: 'x' } }],
      })) as { results: { error?: { code: string } }[] }
    ).results;
    expect(write?.error?.code).toBe('PLAN_MODE');
    await second.agents.close(0);
    second.store.close();
  });
});

describe('request deadlines and ids', () => {
  it('a request that outlives its deadline is 504 REQUEST_TIMEOUT and the service keeps serving', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dsh-api-timeout-'));
    dirs.push(dataDir);
    const memory = createMemoryProvider();
    const stuck: SandboxProvider = { ...memory, get: () => new Promise(() => {}) };
    const { store, agents, app } = bootApp(dataDir, stuck, { requestTimeoutMs: 100 });
    const { apiKey } = await store.tenants.createTenant('t');
    const H = { Authorization: `Bearer ${apiKey}` };
    const agent = (await (
      await app.request('/v1/agents', {
        method: 'POST',
        headers: { ...H, 'Content-Type': 'application/json' },
        body: '{}',
      })
    ).json()) as { id: string };
    const res = await app.request(`/v1/agents/${agent.id}/files?path=a.txt`, { headers: H });
    expect(res.status).toBe(504);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('REQUEST_TIMEOUT');
    expect((await app.request('/v1/agents', { headers: H })).status).toBe(200);
    await agents.close(0);
    store.close();
  });

  it('every response carries a request id; a well-formed client id is echoed, also on errors', async () => {
    api = await makeApi();
    const own = await api.request(api.keyA, 'GET', '/v1/agents/agt_nope', undefined, {
      'X-Request-Id': 'client-req-42',
    });
    expect(own.status).toBe(404);
    expect(own.headers.get('x-request-id')).toBe('client-req-42');
    const generated = await api.request(undefined, 'GET', '/v1/agents');
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a finished SSE call stream gives its concurrency slot back', async () => {
    api = await makeApi({ tenantConcurrency: 1 });
    const agent = await api.createAgent(api.keyA);
    for (let i = 0; i < 3; i++) {
      const res = await api.callStream(api.keyA, agent.id, [
        { id: `c${i}`, name: 'glob', arguments: { pattern: '*' } },
      ]);
      expect(res.status).toBe(200);
      const messages = await readSse(res.body as ReadableStream<Uint8Array>);
      expect(messages.at(-1)?.event).toBe('results');
    }
    expect((await api.request(api.keyA, 'GET', '/v1/agents')).status).toBe(200);
  });
});
