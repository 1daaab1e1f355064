// Remote MCP servers (issue 14) through the egress gateway (issue 19): a Streamable HTTP server on
// loopback (the official SDK's server handler) is reached by the control plane only once the
// tenant's allowlist admits it; its token header reaches the server but never the model, the API's
// answers or the log; its tools are the agent's mcp__<server>__<tool> tools like a stdio server's.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { createMcpHandler, Server as McpServer } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, type Loose, makeApi } from './harness.ts';

const TOKEN = 'Bearer mcp-remote-token-51c2';
let http: Server;
let port: number;
let api: Api;
const authorizations: string[] = [];

function echoServer(): McpServer {
  const server = new McpServer({ name: 'remote-echo', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler('tools/list', async () => ({
    tools: [
      {
        name: 'echo',
        description: 'Echoes its message.',
        inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
      },
    ],
  }));
  server.setRequestHandler('tools/call', async (request) => ({
    content: [{ type: 'text', text: `echo: ${String(request.params.arguments?.message)}` }],
  }));
  return server;
}

beforeAll(async () => {
  const handler = createMcpHandler(echoServer);
  http = await new Promise<Server>((resolve) => {
    const s = serve(
      {
        fetch: (request: Request) => {
          authorizations.push(request.headers.get('authorization') ?? '');
          return handler.fetch(request);
        },
        hostname: '127.0.0.1',
        port: 0,
      },
      () => resolve(s as Server),
    ) as Server;
  });
  port = (http.address() as AddressInfo).port;
  api = await makeApi({}, { egress: { testHosts: [{ ip: '127.0.0.1' }] } });
});

afterAll(async () => {
  await api?.close();
  http?.close();
});

const register = (agentId: string) =>
  api.request(api.keyA, 'POST', `/v1/agents/${agentId}/mcp-servers`, {
    name: 'remote',
    transport: 'http',
    url: `http://127.0.0.1:${port}/mcp`,
    headers: { Authorization: TOKEN },
  });

describe('remote MCP servers', () => {
  it('are reachable only when the tenant allowlists them, and their token is never shown', async () => {
    const agent = await api.createAgent(api.keyA);
    const refused = await register(agent.id);
    expect(refused.status).toBe(502);
    expect(refused.json.error).toMatchObject({ code: 'MCP_SERVER_FAILED' });
    expect(refused.json.error.message).toContain('egress allowlist');
    expect(authorizations).toEqual([]);

    expect(
      (await api.request(api.keyA, 'PUT', '/v1/egress', { allow: [{ host: '127.0.0.1', ports: [port] }] }))
        .status,
    ).toBe(200);
    const res = await register(agent.id);
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({
      name: 'remote',
      transport: 'http',
      url: `http://127.0.0.1:${port}/mcp`,
      headers: ['Authorization'],
      state: 'ready',
      tools: [{ name: 'mcp__remote__echo', tool: 'echo' }],
    });
    const result = (
      await api.call(api.keyA, agent.id, [
        { id: 'm1', name: 'mcp__remote__echo', arguments: { message: 'hi' } },
      ])
    ).json.results[0] as Loose;
    expect(result).toMatchObject({ ok: true, content: [{ type: 'text', text: 'echo: hi' }] });
    expect(authorizations.length).toBeGreaterThan(0);
    expect(authorizations.every((a) => a === TOKEN)).toBe(true);

    const shown = [
      res.text,
      (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/mcp-servers`)).text,
      (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/tools`)).text,
      (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`)).text,
      JSON.stringify(result),
    ];
    for (const text of shown) expect(text).not.toContain('mcp-remote-token');
    const events = (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`)).json
      .events as Loose[];
    const egress = events.filter((e) => e.type === 'egress').map((e) => e.data);
    expect(egress[0]).toMatchObject({ via: 'mcp', decision: 'deny' });
    expect(egress.at(-1)).toMatchObject({
      via: 'mcp',
      decision: 'allow',
      host: '127.0.0.1',
      port,
      method: 'POST',
    });
  });

  it('refuses a URL with userinfo or another scheme at registration', async () => {
    const agent = await api.createAgent(api.keyA);
    for (const url of ['http://u:p@127.0.0.1/mcp', 'file:///etc/passwd']) {
      const res = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/mcp-servers`, {
        name: 'bad',
        transport: 'http',
        url,
      });
      expect(res.status, url).toBe(400);
    }
  });
});
