// A hostile remote MCP server (Streamable HTTP on 127.0.0.1, written by hand so that it can break
// every rule) through the real API and egress gateway: a body or an SSE event past the message
// size, a flood of notifications or of SSE lines in a call's answer, a flood on the session's
// notification stream, and a stream it ends at once with `retry: 0` (the SDK reopened it in a tight
// loop). Each is cut while it is read, never buffered whole: the call fails with MCP_SERVER_FAILED
// naming what was exceeded, as a stdio server's; the next call starts the server afresh; the API
// keeps answering and the other tenant's calls go on.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, type Loose, makeApi } from './harness.ts';

/** The tenant's maxResultBytes here: a message may have 64 KiB + 64 KiB of envelope. */
const MAX_RESULT = 64 * 1024;
const MAX_MESSAGE = MAX_RESULT + 64 * 1024;
const TOOLS = ['ok', 'huge', 'bigevent', 'notifyflood', 'lineflood', 'endless'];

let http: Server;
let port: number;
let api: Api;
/** GET streams the hostile server was asked to open, by path. */
const streams: Record<string, number> = {};

const rpc = (id: unknown, result: unknown) => JSON.stringify({ jsonrpc: '2.0', id, result });
const note = (i: number) =>
  JSON.stringify({
    jsonrpc: '2.0',
    method: 'notifications/message',
    params: { level: 'info', data: `n${i}` },
  });
const sse = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' });

/** Writes `next()` until it answers undefined or the client goes. */
function pump(res: ServerResponse, next: () => string | undefined): void {
  const go = () => {
    for (;;) {
      if (res.destroyed || res.writableEnded) return;
      const chunk = next();
      if (chunk === undefined) return void res.end();
      if (!res.write(chunk)) return void res.once('drain', go);
    }
  };
  res.on('error', () => {});
  go();
}

function call(res: ServerResponse, id: unknown, tool: string): void {
  let i = 0;
  switch (tool) {
    case 'huge': // one JSON answer of ~200 KiB, written in 8 KiB pieces
      res.writeHead(200, { 'content-type': 'application/json' });
      return void pump(res, () =>
        i++ === 0
          ? `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"`
          : i < 26
            ? 'h'.repeat(8192)
            : i === 26
              ? '"}]}}'
              : undefined,
      );
    case 'endless': // a JSON answer that never ends
      res.writeHead(200, { 'content-type': 'application/json' });
      return void pump(res, () => (i++ === 0 ? '{"jsonrpc":"2.0","id":1,"result":"' : 'h'.repeat(8192)));
    case 'bigevent': // one SSE event that never ends: data lines of 8 KiB, no blank line
      sse(res);
      return void pump(res, () => `data: ${'e'.repeat(8192)}\n`);
    case 'notifyflood': // notifications, endlessly, never the answer
      sse(res);
      return void pump(res, () => `event: message\ndata: ${note(i++)}\n\n`);
    case 'lineflood': // SSE comment lines, endlessly: no message at all, every line parsed
      sse(res);
      return void pump(res, () => ': x\n\n'.repeat(100));
    default:
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(rpc(id, { content: [{ type: 'text', text: 'fine' }] }));
  }
}

/** The session's GET stream, by path: none (/mcp), a late flood (/getflood), ended at once (/reopen). */
function getStream(req: IncomingMessage, res: ServerResponse): void {
  const path = req.url ?? '';
  streams[path] = (streams[path] ?? 0) + 1;
  if (path === '/reopen') {
    sse(res);
    return void res.end('retry: 0\n\n');
  }
  if (path !== '/getflood') {
    res.writeHead(405);
    return void res.end();
  }
  sse(res);
  res.write(': hello\n\n');
  let i = 0;
  // After the start (registration answers first), a flood of notifications on the session's stream.
  setTimeout(() => pump(res, () => `data: ${note(i++)}\n\n`), 500);
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  if (req.method === 'GET') {
    getStream(req, res);
    return;
  }
  if (req.method !== 'POST') {
    res.writeHead(405);
    return void res.end();
  }
  let body = '';
  req.on('data', (chunk: Buffer) => {
    body += chunk.toString('utf8');
  });
  req.on('end', () => {
    const message = JSON.parse(body) as { id?: unknown; method?: string; params?: Loose };
    if (message.id === undefined) {
      res.writeHead(202);
      return void res.end();
    }
    if (message.method === 'initialize') {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'hostile-1' });
      return void res.end(
        rpc(message.id, {
          protocolVersion: message.params.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: 'hostile', version: '1' },
        }),
      );
    }
    if (message.method === 'tools/list') {
      const tools = TOOLS.map((name) => ({ name, description: name, inputSchema: { type: 'object' } }));
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(rpc(message.id, { tools }));
    }
    if (message.method === 'tools/call') {
      call(res, message.id, String(message.params?.name));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'no' } }));
  });
}

beforeAll(async () => {
  http = createServer(handle);
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  port = (http.address() as AddressInfo).port;
  api = await makeApi(
    {},
    {
      egress: { testHosts: [{ ip: '127.0.0.1' }] },
      agents: { mcpLimitsOf: () => ({ maxResultBytes: MAX_RESULT, callTimeoutMs: 15_000 }) },
    },
  );
  for (const key of [api.keyA, api.keyB])
    expect(
      (await api.request(key, 'PUT', '/v1/egress', { allow: [{ host: '127.0.0.1', ports: [port] }] })).status,
    ).toBe(200);
});

afterAll(async () => {
  await api?.close();
  http?.closeAllConnections();
  http?.close();
});

const register = async (key: string, path = '/mcp'): Promise<string> => {
  const agent = await api.createAgent(key);
  const res = await api.request(key, 'POST', `/v1/agents/${agent.id}/mcp-servers`, {
    name: 'hostile',
    transport: 'http',
    url: `http://127.0.0.1:${port}${path}`,
  });
  expect(res.status, res.text).toBe(201);
  return agent.id;
};

const callTool = async (key: string, agent: string, tool: string, id = tool): Promise<Loose> =>
  (await api.call(key, agent, [{ id, name: `mcp__hostile__${tool}`, arguments: {} }])).json.results[0];

const text = (r: Loose): string => r?.content?.[0]?.text ?? '';

/** The longest GET /v1/health took while `work` ran (asked every 20 ms). */
async function healthDuring<T>(work: Promise<T>): Promise<{ value: T; worstMs: number }> {
  let worstMs = 0;
  let over = false;
  const poll = (async () => {
    while (!over) {
      const t = performance.now();
      await api.request(undefined, 'GET', '/v1/health');
      worstMs = Math.max(worstMs, performance.now() - t);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const value = await work.finally(() => {
    over = true;
  });
  await poll;
  return { value, worstMs };
}

describe('a hostile remote MCP server', () => {
  it('is cut off at a body, an event, or a flood in a call’s answer; the call fails, the next one starts afresh', async () => {
    const agent = await register(api.keyA);
    const other = await register(api.keyB);
    expect(text(await callTool(api.keyA, agent, 'ok'))).toBe('fine');
    const cases: Array<[string, RegExp]> = [
      ['huge', new RegExp(`was stopped: it sent a message over ${MAX_MESSAGE} bytes`)],
      ['endless', new RegExp(`was stopped: it sent a message over ${MAX_MESSAGE} bytes`)],
      ['bigevent', new RegExp(`was stopped: it sent an event over ${MAX_MESSAGE} bytes`)],
      ['notifyflood', /was stopped: it sent more messages nobody asked for than its budget \(1000 at once/],
      ['lineflood', /was stopped: it sent more than its output budget \(10000 lines/],
    ];
    for (const [tool, why] of cases) {
      const before = process.memoryUsage().rss;
      const { value: r, worstMs } = await healthDuring(callTool(api.keyA, agent, tool));
      expect(r.ok, tool).toBe(false);
      expect(r.error?.code, `${tool}: ${text(r)}`).toBe('MCP_SERVER_FAILED');
      expect(text(r), tool).toMatch(why);
      expect(worstMs, tool).toBeLessThan(1000);
      expect((process.memoryUsage().rss - before) / 2 ** 20, tool).toBeLessThan(100);
      // The other tenant's server is untouched; this one starts afresh at the next call.
      expect(text(await callTool(api.keyB, other, 'ok', `b-${tool}`))).toBe('fine');
      expect(text(await callTool(api.keyA, agent, 'ok', `after-${tool}`))).toBe('fine');
    }
    // Read while it streamed: every answer was dropped past the message size (128 KiB and what the
    // gateway had read ahead), before the gateway's own cap of a POST's answer (4 x 64 KiB).
    const bytesIn = (await api.request(api.keyA, 'GET', `/v1/agents/${agent}/events`)).json.events
      .filter((e: Loose) => e.type === 'egress' && e.data.method === 'POST')
      .map((e: Loose) => e.data.bytesIn as number);
    expect(Math.max(...bytesIn)).toBeGreaterThan(MAX_MESSAGE);
    expect(Math.max(...bytesIn)).toBeLessThan(4 * MAX_RESULT);
  }, 60_000);

  it('is cut off when it floods the session’s notification stream, and starts afresh at the next call', async () => {
    const agent = await register(api.keyA, '/getflood');
    expect(text(await callTool(api.keyA, agent, 'ok'))).toBe('fine');
    // The flood comes 500 ms after the stream opened; the session is cut, its reason kept.
    let server: Loose;
    for (let i = 0; i < 100; i++) {
      await new Promise((r) => setTimeout(r, 100));
      server = (await api.request(api.keyA, 'GET', `/v1/agents/${agent}/mcp-servers`)).json.servers?.[0];
      if (server?.lastError !== undefined) break;
    }
    expect(server?.lastError).toMatch(/was stopped: it sent more messages nobody asked for than its budget/);
    expect(server?.state).not.toBe('ready');
    // Dropped while it streamed: the stream's hop read a bounded part of what the server wrote.
    let hop: Loose;
    for (let i = 0; i < 50 && hop === undefined; i++) {
      const events = (await api.request(api.keyA, 'GET', `/v1/agents/${agent}/events`)).json
        .events as Loose[];
      hop = events.find((e) => e.type === 'egress' && e.data.method === 'GET' && e.data.bytesIn > 0)?.data;
      if (hop === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    expect(hop.bytesIn).toBeLessThan(1024 * 1024);
    expect(text(await callTool(api.keyA, agent, 'ok', 'ok2'))).toBe('fine');
  }, 30_000);

  it('is cut off when it ends its notification stream over and over with `retry: 0`', async () => {
    const agent = await register(api.keyA, '/reopen');
    let server: Loose;
    for (let i = 0; i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      server = (await api.request(api.keyA, 'GET', `/v1/agents/${agent}/mcp-servers`)).json.servers?.[0];
      if (server?.lastError !== undefined) break;
    }
    expect(server?.lastError).toMatch(
      /was stopped: it ended its notification stream more often than its budget \(10 openings/,
    );
    // The burst, and no more: it was not reopened in a loop.
    expect(streams['/reopen']).toBe(10);
  }, 30_000);
});
