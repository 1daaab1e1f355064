// The reference MCP server in a real agent container (issue 14): the official "everything" server,
// installed in the sandbox image at build time, registered as the agent's stdio MCP server and run
// by sandboxd as the agent with no network. Its tools are callable through POST /calls, from
// run_code, and through the agent's own MCP endpoint (MCP in, MCP out, with the official SDK's
// client), with policy and the log in the path; after a restart of the control plane they are
// still the agent's, and the server starts again at the next call.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json, served } from './served.ts';

const service = served('mcp-servers');

const callOne = async (server: Running, key: string, agent: string, name: string, args: unknown) =>
  (
    await json(server, key, 'POST', `/v1/agents/${agent}/calls`, {
      calls: [{ id: 'c', name, arguments: args }],
    })
  ).json.results[0];

it('the everything server runs in the agent container: POST /calls, run_code, MCP in and out, policy, log, restart', async () => {
  const first = await service.start();
  const key = (await first.store.tenants.createTenant('mcp-servers')).apiKey;
  const agent = (
    await json(first, key, 'POST', '/v1/agents', {
      mode: 'both',
      policy: { deny: ['mcp__everything__get-env'] },
    })
  ).json;

  const registered = await json(first, key, 'POST', `/v1/agents/${agent.id}/mcp-servers`, {
    name: 'everything',
    command: ['mcp-server-everything', 'stdio'],
  });
  expect(registered.status).toBe(201);
  expect(registered.json.state).toBe('ready');
  const names = registered.json.tools.map((t: Loose) => t.name);
  expect(names).toEqual(expect.arrayContaining(['mcp__everything__echo', 'mcp__everything__get-sum']));

  // Natively, through POST /calls.
  expect(await callOne(first, key, agent.id, 'mcp__everything__echo', { message: 'hi' })).toMatchObject({
    ok: true,
    content: [{ type: 'text', text: 'Echo: hi' }],
  });
  const image = await callOne(first, key, agent.id, 'mcp__everything__get-tiny-image', {});
  expect(image.content.some((p: Loose) => p.type === 'image' && p.mimeType === 'image/png')).toBe(true);
  expect((await callOne(first, key, agent.id, 'mcp__everything__get-env', {})).error.code).toBe('DENIED');
  // The server has no network: its one fetching tool fails as a tool failure, nothing else notices.
  const fetched = await callOne(first, key, agent.id, 'mcp__everything__gzip-file-as-resource', {
    name: 'x.gz',
    data: 'http://192.0.2.1/x',
  });
  expect(fetched.ok).toBe(false);
  expect((await callOne(first, key, agent.id, 'mcp__everything__echo', { message: 'still' })).ok).toBe(true);

  // From a program: a tools.* binding through the same pipeline.
  const program = await callOne(first, key, agent.id, 'run_code', {
    description: 'echo through MCP',
    code: "const r = await tools.mcp__everything__echo({ message: 'from code' }); return r.content[0].text;",
  });
  expect(program.ok).toBe(true);
  expect(program.content[0].text).toContain('Echo: from code');

  // MCP in, MCP out: the agent's own MCP endpoint serves the server's tools.
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${first.url}/v1/agents/${agent.id}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  const listed = (await client.listTools()).tools.map((t) => t.name);
  expect(listed).toContain('mcp__everything__echo');
  const viaMcp = await client.callTool({ name: 'mcp__everything__get-sum', arguments: { a: 2, b: 3 } });
  expect(JSON.stringify(viaMcp.content)).toContain('5');
  const denied = await client.callTool({ name: 'mcp__everything__get-env', arguments: {} });
  expect(denied.isError).toBe(true);
  await client.close();

  const log = (await json(first, key, 'GET', `/v1/agents/${agent.id}/events`)).json.events as Loose[];
  const called = log.filter((e) => e.type === 'tool.call').map((e) => e.data?.name);
  expect(called).toEqual(expect.arrayContaining(['mcp__everything__echo', 'mcp__everything__get-sum']));
  expect(log.some((e) => e.type === 'agent.mcp_servers')).toBe(true);

  // A new control plane: the tools come from the store, the server starts again at the next call.
  await service.stop(first);
  const second = await service.start();
  const tools = (await json(second, key, 'GET', `/v1/agents/${agent.id}/tools`)).json.tools.map(
    (t: Loose) => t.name,
  );
  expect(tools).toContain('mcp__everything__echo');
  expect((await json(second, key, 'GET', `/v1/agents/${agent.id}/mcp-servers`)).json.servers[0].state).toBe(
    'stopped',
  );
  expect(await callOne(second, key, agent.id, 'mcp__everything__echo', { message: 'back' })).toMatchObject({
    ok: true,
    content: [{ type: 'text', text: 'Echo: back' }],
  });
  expect((await json(second, key, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
});

it('a server of the agent’s own runs with the agent’s uid and no network; its flood fails only its own call', async () => {
  const server = await service.current();
  const key = (await server.store.tenants.createTenant('mcp-own')).apiKey;
  const agent = (await json(server, key, 'POST', '/v1/agents', {})).json;
  const source = readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'mcp', 'tiny-server.mjs'));
  const put = await fetch(`${server.url}/v1/agents/${agent.id}/files?path=tiny.mjs`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${key}` },
    body: source,
  });
  expect(put.ok).toBe(true);
  const registered = await json(server, key, 'POST', `/v1/agents/${agent.id}/mcp-servers`, {
    name: 'tiny',
    command: ['node', 'tiny.mjs'],
  });
  expect(registered.status).toBe(201);
  const who = JSON.parse((await callOne(server, key, agent.id, 'mcp__tiny__whoami', {})).content[0].text);
  // The agent's uid (the workspace is shared), the servers' gid (the agent cannot read its /proc).
  expect(who).toEqual({ uid: 1000, gid: 1001, nets: ['lo'] });
  const flood = await callOne(server, key, agent.id, 'mcp__tiny__huge', { n: 2 * 1024 * 1024 });
  expect(flood.error.code).toBe('MCP_SERVER_FAILED');
  expect((await callOne(server, key, agent.id, 'mcp__tiny__echo', { message: 'ok' })).content[0].text).toBe(
    'echo: ok',
  );
  // The rest of the sandbox never noticed.
  expect((await callOne(server, key, agent.id, 'bash', { command: 'echo fine', description: 'x' })).ok).toBe(
    true,
  );
});
