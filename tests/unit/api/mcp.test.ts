// Every agent is an MCP server (issue 14): the official SDK's Client over its Streamable HTTP
// transport, on real loopback HTTP, lists and calls an agent's tools in native and code mode, in
// the 2025 revision most clients speak and in 2026-07-28; the same pipeline as POST /calls decides
// (policy, approvals, the log), another tenant's key is refused, and a cancel stops the call.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type ServerType, serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { ANSWERS_PER_TENANT } from '../../../host/api/routes/mcp-streams.ts';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from './harness.ts';

const store = openStore({ path: ':memory:' });
const isolates = createIsolateHost({ workers: 1 });
const { agents } = assembleAgents({ store, sandboxes: createMemoryProvider(), isolates });
/** The tenants' request slots (small, so that streams holding them would show). */
const SLOTS = 4;
const app = createApp({
  startedAt: Date.now(),
  version: 'test',
  store,
  agents,
  limits: { tenantConcurrency: SLOTS },
});
const keyA = (await store.tenants.createTenant('tenant-a')).apiKey;
const keyB = (await store.tenants.createTenant('tenant-b')).apiKey;
let server: ServerType;
let base = '';
const clients: Client[] = [];

beforeAll(async () => {
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await agents.close(0);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await isolates.close();
  store.close();
});

const ERAS = ['2025', '2026'] as const;
type Era = (typeof ERAS)[number];

const http = async (key: string, method: string, path: string, body?: unknown): Promise<Loose> => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: await res.json().catch(() => undefined) };
};

const createAgent = async (body: Record<string, unknown> = {}): Promise<string> => {
  const res = await http(keyA, 'POST', '/v1/agents', body);
  expect(res.status).toBe(201);
  return res.json.id;
};

const connect = async (agentId: string, era: Era, key = keyA, onListChanged?: () => void) => {
  const client = new Client(
    { name: 'dsh-sandbox-test', version: '1.0.0' },
    era === '2026' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  );
  if (onListChanged) client.setNotificationHandler('notifications/tools/list_changed', () => onListChanged());
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/v1/agents/${agentId}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
};

const textOf = (result: Loose): string =>
  (result.content as { type: string; text?: string }[]).map((p) => p.text ?? '').join('\n');

describe.each(ERAS)('an agent as an MCP server (%s protocol revision)', (era) => {
  it('lists exactly the native tool set and runs calls through the pipeline', async () => {
    const agentId = await createAgent({ preset: 'standard' });
    const client = await connect(agentId, era);
    const listed = await client.listTools();
    const surface = await http(keyA, 'GET', `/v1/agents/${agentId}/tools`);
    expect(
      listed.tools.map((t) => ({
        name: t.name,
        description: t.description,
        parameters: t.inputSchema,
        annotations: t.annotations,
      })),
    ).toEqual(surface.json.tools);
    // Hints from the tool definitions: reading changes nothing, writing overwrites the same way
    // twice, a shell may do anything anywhere.
    const hints = Object.fromEntries(listed.tools.map((t) => [t.name, t.annotations]));
    expect(hints.read).toEqual({
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(hints.write).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(hints.bash).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    });

    const wrote = await client.callTool({
      name: 'write',
      arguments: { file_path: 'notes/a.txt', content: 'hello from mcp\n' },
    });
    expect(wrote.isError).toBeFalsy();
    const read = await client.callTool({ name: 'read', arguments: { file_path: 'notes/a.txt' } });
    expect(textOf(read)).toContain('hello from mcp');
    // The JSON value is there as structuredContent too, as POST /calls returns it.
    const viaHttp = await http(keyA, 'POST', `/v1/agents/${agentId}/calls`, {
      calls: [{ id: 'r1', name: 'read', arguments: { file_path: 'notes/a.txt' } }],
    });
    expect(read.structuredContent).toEqual(viaHttp.json.results[0].value);
    expect(JSON.stringify(read.structuredContent)).toContain('hello from mcp');

    const invalid = await client.callTool({ name: 'read', arguments: { file_path: 42 } });
    expect(invalid.isError).toBe(true);
    expect(textOf(invalid)).toMatch(/^Error \[INVALID_ARGUMENTS\]: .*file_path/);
    // An unknown tool is the request's fault: JSON-RPC -32602, not a tool result.
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('no_such_tool'),
    });

    // The durable log has the MCP calls like any other.
    const log = await http(keyA, 'GET', `/v1/agents/${agentId}/events`);
    const results = log.json.events.filter((e: Loose) => e.type === 'tool.result');
    expect(results.map((e: Loose) => e.data.name ?? e.data.toolName)).toContain('write');
  });

  it('lists run_code with the generated SDK in code mode, and runs a program', async () => {
    const agentId = await createAgent({ preset: 'code', mode: 'code' });
    const client = await connect(agentId, era);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['run_code']);
    const surface = await http(keyA, 'GET', `/v1/agents/${agentId}/tools`);
    expect(tools[0]?.description).toBe(surface.json.tools[0].description);
    expect(tools[0]?.description).toContain('tools.');
    // A program is whatever its calls do.
    expect(tools[0]?.annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    });

    const ran = await client.callTool({
      name: 'run_code',
      arguments: {
        description: 'write and read back',
        code: "await tools.write({ file_path: 'c.txt', content: 'from code mode' });\nconst r = await tools.read({ file_path: 'c.txt' });\nconsole.log(JSON.stringify(r));",
      },
    });
    expect(ran.isError, textOf(ran)).toBeFalsy();
    expect(textOf(ran)).toContain('from code mode');
    // run_code's value, { logs, value }, as structuredContent.
    expect(ran.structuredContent).toMatchObject({ logs: [expect.stringContaining('from code mode')] });
  });

  it('a policy denial comes back as an isError result with its code; an ask waits for the answer', async () => {
    const agentId = await createAgent({ policy: { deny: ['write'], ask: ['edit'] } });
    const client = await connect(agentId, era);
    const denied = await client.callTool({ name: 'write', arguments: { file_path: 'x', content: 'y' } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toMatch(/^Error \[DENIED\]/);

    const edit = client.callTool({
      name: 'edit',
      arguments: { file_path: 'x', old_string: 'y', new_string: 'z' },
    });
    const [approval] = await until(async () => {
      const res = await http(keyA, 'GET', `/v1/agents/${agentId}/requests?state=pending`);
      return res.json.requests.length > 0 && res.json.requests;
    });
    expect(approval).toMatchObject({ kind: 'approval', payload: { toolName: 'edit' } });
    await http(keyA, 'POST', `/v1/agents/${agentId}/requests/${approval.id}`, { allow: false, reason: 'no' });
    const answered = await edit;
    expect(answered.isError).toBe(true);
    expect(textOf(answered)).toMatch(/^Error \[DENIED\]/);
  });

  it("another tenant's key cannot reach the agent (404, like elsewhere); no key is 401", async () => {
    const agentId = await createAgent();
    await expect(connect(agentId, era, keyB)).rejects.toThrow();
    await expect(connect(agentId, era, 'not-a-key')).rejects.toThrow();
    const url = `${base}/v1/agents/${agentId}/mcp`;
    const initialize = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    const other = await fetch(url, {
      method: 'POST',
      headers: { ...headers, Authorization: `Bearer ${keyB}` },
      body: initialize,
    });
    expect(other.status).toBe(404);
    expect(((await other.json()) as Loose).error.code).toBe('NOT_FOUND');
    const none = await fetch(url, { method: 'POST', headers, body: initialize });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('Bearer');
    const own = await fetch(url, {
      method: 'POST',
      headers: { ...headers, Authorization: `Bearer ${keyA}` },
      body: initialize,
    });
    expect(own.status).toBe(200);
    expect(own.headers.get('mcp-session-id')).toBeTruthy();
    await own.body?.cancel();
  });

  it('cancelling a call stops it: the pending remote tool request is cancelled and the log says ABORTED', async () => {
    const agentId = await createAgent();
    const reg = await http(keyA, 'POST', `/v1/agents/${agentId}/remote-tools`, {
      tools: [{ name: 'wait_for_me', description: 'Waits for the client.', parameters: { type: 'object' } }],
    });
    expect(reg.status).toBe(200);
    const client = await connect(agentId, era);
    const controller = new AbortController();
    const call = client.callTool({ name: 'wait_for_me', arguments: {} }, { signal: controller.signal });
    call.catch(() => undefined);
    const [request] = await until(async () => {
      const res = await http(keyA, 'GET', `/v1/agents/${agentId}/requests?state=pending`);
      return res.json.requests.length > 0 && res.json.requests;
    });
    controller.abort('the user pressed stop');
    await expect(call).rejects.toThrow();
    await until(async () => {
      const res = await http(keyA, 'GET', `/v1/agents/${agentId}/requests?state=cancelled`);
      return res.json.requests.some((r: Loose) => r.id === request.id);
    });
    const result = await until(async () => {
      const log = await http(keyA, 'GET', `/v1/agents/${agentId}/events`);
      return log.json.events.find((e: Loose) => e.type === 'tool.result' && e.callId === request.callId);
    });
    expect(result.data.error.code).toMatch(/^ABORTED/);
  });

  it('tells a connected client when the tool set changes (remote tools registered)', async () => {
    const agentId = await createAgent();
    let changes = 0;
    const client = await connect(agentId, era, keyA, () => changes++);
    if (era === '2026') await client.listen({ toolsListChanged: true });
    // The 2025-era stream is a GET the client opens on its own after initialize: register (the
    // same tools, idempotently) until a notification arrives rather than guess when it is open.
    await until(
      async () => {
        const reg = await http(keyA, 'POST', `/v1/agents/${agentId}/remote-tools`, {
          tools: [{ name: 'late_tool', description: 'Registered later.', parameters: { type: 'object' } }],
        });
        expect(reg.status).toBe(200);
        return until(() => changes > 0, { timeoutMs: 500 }).catch(() => false);
      },
      { what: 'tools/list_changed' },
    );
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('late_tool');
  });
});

// A 2025-era answer outlives its connection: its SSE events carry ids, a client that lost the
// stream resumes it with Last-Event-ID and gets the answer the call produced meanwhile, and only the
// agent's own tenant can (MCP Streamable HTTP, "Resumability and Redelivery").
describe('resumable answers (2025 revisions)', () => {
  const waitingAgent = async () => {
    const agentId = await createAgent();
    const reg = await http(keyA, 'POST', `/v1/agents/${agentId}/remote-tools`, {
      tools: [{ name: 'wait_for_me', description: 'Waits for the client.', parameters: { type: 'object' } }],
    });
    expect(reg.status).toBe(200);
    return agentId;
  };
  const pendingRequest = async (agentId: string) =>
    (
      await until(async () => {
        const res = await http(keyA, 'GET', `/v1/agents/${agentId}/requests?state=pending`);
        return res.json.requests.length > 0 && res.json.requests;
      })
    )[0];
  const rpc = (agentId: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    fetch(`${base}/v1/agents/${agentId}/mcp`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${keyA}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2025-11-25',
        ...headers,
      },
      body: JSON.stringify(body),
      ...(signal === undefined ? {} : { signal }),
    });
  const resume = (agentId: string, lastEventId: string, key = keyA) =>
    fetch(`${base}/v1/agents/${agentId}/mcp`, {
      headers: {
        Authorization: `Bearer ${key}`,
        Accept: 'text/event-stream',
        'MCP-Protocol-Version': '2025-11-25',
        'Last-Event-ID': lastEventId,
      },
    });

  it('a dropped stream is resumed with Last-Event-ID: the call ran on and its answer comes', async () => {
    const agentId = await waitingAgent();
    const dropped = new AbortController();
    const res = await rpc(
      agentId,
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'wait_for_me', arguments: {} } },
      {},
      dropped.signal,
    );
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const priming = new TextDecoder().decode((await reader.read()).value);
    const [, primingId = ''] = /^id: (\S+)$/m.exec(priming) ?? [];
    expect(primingId).toMatch(/_0$/);
    expect(priming).toMatch(/^retry: \d+$/m);
    // The connection goes before the answer; the call is not cancelled by it.
    dropped.abort();
    const request = await pendingRequest(agentId);
    await http(keyA, 'POST', `/v1/agents/${agentId}/requests/${request.id}`, { result: 'answered late' });

    // Nobody else resumes it: another agent of the tenant, another tenant, a made-up id.
    const other = await createAgent();
    for (const [agent, id, key] of [
      [other, primingId, keyA],
      [agentId, primingId, keyB],
      [agentId, `${primingId.slice(0, -2)}_x`, keyA],
      [agentId, '../../etc/passwd', keyA],
    ] as const) {
      const refused = await resume(agent, id, key);
      expect(refused.status).toBe(404);
      await refused.body?.cancel();
    }

    const resumed = await resume(agentId, primingId);
    expect(resumed.status).toBe(200);
    const text = await resumed.text();
    const [, answerId = ''] = /^id: (\S+)$/m.exec(text) ?? [];
    expect(answerId).toBe(primingId.replace(/_0$/, '_1'));
    const answer = JSON.parse(/^data: (.*)$/m.exec(text)?.[1] ?? 'null');
    expect(answer).toMatchObject({ id: 7, result: { content: [{ type: 'text', text: 'answered late' }] } });
    // Resumed after the last event: nothing more, the stream ends.
    expect(await (await resume(agentId, answerId)).text()).not.toContain('data:');
    const log = await http(keyA, 'GET', `/v1/agents/${agentId}/requests?state=cancelled`);
    expect(log.json.requests).toEqual([]);
  });

  it('answers whose clients went still count: 64 running per tenant, and a cancel always gets through', async () => {
    const agentId = await waitingAgent();
    const call = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'wait_for_me', arguments: {} },
    });
    // Each call's client reads the priming event and goes; the call runs on.
    for (let id = 1; id <= ANSWERS_PER_TENANT; id++) {
      const dropped = new AbortController();
      const res = await rpc(agentId, call(id), {}, dropped.signal);
      expect(res.status).toBe(200);
      await (res.body as ReadableStream<Uint8Array>).getReader().read();
      dropped.abort();
    }
    const refused = await rpc(agentId, call(999));
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as Loose).error.code).toBe('RATE_LIMITED');
    // A cancel is a notification: it gets through, and the cancelled call gives its place back.
    const cancel = await rpc(agentId, {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 1, reason: 'not needed' },
    });
    expect(cancel.status).toBe(202);
    const again = await until(async () => {
      const res = await rpc(agentId, call(1000));
      if (res.status === 200) return res;
      await res.body?.cancel();
      return undefined;
    });
    await again.body?.cancel();
    // The rest go with the agent, and give their places back.
    expect((await http(keyA, 'DELETE', `/v1/agents/${agentId}`)).status).toBe(204);
    const other = await createAgent();
    await until(async () => {
      const res = await rpc(other, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
      await res.body?.cancel();
      return res.status === 200;
    });
  });

  it('the official client resumes on its own when the call stream breaks', async () => {
    const agentId = await waitingAgent();
    // Cuts the tools/call answer after its first chunk (the priming event), like a dropped connection.
    const cutting: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method !== 'POST' || !String(init.body).includes('"tools/call"') || !response.body)
        return response;
      const reader = response.body.getReader();
      const first = await reader.read();
      void reader.cancel();
      let sent = false;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (!sent && first.value !== undefined) {
            sent = true;
            controller.enqueue(first.value);
          } else controller.error(new TypeError('connection reset'));
        },
      });
      return new Response(body, response);
    };
    const client = new Client({ name: 'resuming', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/v1/agents/${agentId}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${keyA}` } },
        fetch: cutting,
      }),
    );
    clients.push(client);
    const call = client.callTool({ name: 'wait_for_me', arguments: {} });
    const request = await pendingRequest(agentId);
    await http(keyA, 'POST', `/v1/agents/${agentId}/requests/${request.id}`, { result: 'worth the wait' });
    expect(textOf(await call)).toBe('worth the wait');
  });
});

// MCP clients hold notification streams open for as long as they are connected. A 2026-era
// `subscriptions/listen` POST, like the 2025-era GET, takes none of the tenant's request slots (a
// few connected clients must not lock the tenant out of its own API) and ends with the agent.
describe('notification streams of connected clients', () => {
  /** A 2026-era client listening for tool changes; `ended` turns true when its listen stream ends. */
  const listener = async (agentId: string) => {
    const state = { ended: false };
    const watch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (typeof init?.body !== 'string' || !init.body.includes('subscriptions/listen') || !response.body)
        return response;
      const marker = new TransformStream({
        flush() {
          state.ended = true;
        },
      });
      return new Response(response.body.pipeThrough(marker), response);
    };
    const client = new Client(
      { name: 'listener', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/v1/agents/${agentId}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${keyA}` } },
        fetch: watch,
      }),
    );
    clients.push(client);
    await client.listen({ toolsListChanged: true });
    return state;
  };

  it('2026 listen streams take no request slot and end when the agent is deleted', async () => {
    const agentId = await createAgent();
    const listening: { ended: boolean }[] = [];
    for (let i = 0; i < SLOTS + 2; i++) listening.push(await listener(agentId));
    // Every slot is still the tenant's: as many requests at once as it has slots are served.
    const statuses = await Promise.all(
      Array.from({ length: SLOTS }, async () => (await http(keyA, 'GET', `/v1/agents/${agentId}`)).status),
    );
    expect(statuses).toEqual(Array.from({ length: SLOTS }, () => 200));
    expect((await http(keyB, 'GET', '/v1/agents')).status).toBe(200);

    expect((await http(keyA, 'DELETE', `/v1/agents/${agentId}`)).status).toBe(204);
    await until(() => listening.every((s) => s.ended), { what: 'every listen stream ended' });
    expect((await http(keyA, 'GET', '/v1/agents')).status).toBe(200);
  });
});

// The MCP Inspector's CLI (@modelcontextprotocol/inspector, a dev dependency: nothing is fetched at
// run time), as a person would point it at an agent; its HOME is a throwaway directory.
const INSPECTOR = fileURLToPath(
  new URL(
    '../../../node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js',
    import.meta.url,
  ),
);

const inspect = async (agentId: string, ...args: string[]): Promise<Loose> => {
  const home = mkdtempSync(join(tmpdir(), 'dsh-inspector-'));
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        INSPECTOR,
        '--cli',
        `${base}/v1/agents/${agentId}/mcp`,
        '--transport',
        'http',
        '--header',
        `Authorization: Bearer ${keyA}`,
        '--format',
        'json',
        ...args,
      ],
      { env: { PATH: process.env.PATH ?? '', HOME: home }, timeout: 90_000 },
    );
    return JSON.parse(stdout);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
};

// Each test starts the Inspector's CLI three times, a Node program that loads a large bundle (three
// took 2.2 s at load 10 with this file alone; with the whole suite at load 15, the default 20 s was
// not enough: issue 28). The deadlines only guard against a hang.
describe('the MCP Inspector CLI against an agent', { timeout: 300_000 }, () => {
  it('lists and calls the native tools', async () => {
    const agentId = await createAgent({ preset: 'standard' });
    const listed = await inspect(agentId, '--method', 'tools/list');
    const surface = await http(keyA, 'GET', `/v1/agents/${agentId}/tools`);
    expect(listed.result.tools.map((t: Loose) => t.name)).toEqual(
      surface.json.tools.map((t: Loose) => t.name),
    );
    const wrote = await inspect(
      agentId,
      '--method',
      'tools/call',
      '--tool-name',
      'write',
      '--tool-args-json',
      JSON.stringify({ file_path: 'inspected.txt', content: 'seen by the inspector' }),
    );
    expect(wrote.result.isError).toBeFalsy();
    const read = await inspect(
      agentId,
      '--method',
      'tools/call',
      '--tool-name',
      'read',
      '--tool-arg',
      'file_path=inspected.txt',
    );
    expect(textOf(read.result)).toContain('seen by the inspector');
  });

  it('lists run_code in code mode and runs a program', async () => {
    const agentId = await createAgent({ preset: 'code', mode: 'code' });
    const listed = await inspect(agentId, '--method', 'tools/list');
    expect(listed.result.tools.map((t: Loose) => t.name)).toEqual(['run_code']);
    const ran = await inspect(
      agentId,
      '--method',
      'tools/call',
      '--tool-name',
      'run_code',
      '--tool-args-json',
      JSON.stringify({ description: 'sum', code: 'console.log(String(6 * 7));' }),
    );
    expect(textOf(ran.result)).toContain('42');
  });
});
