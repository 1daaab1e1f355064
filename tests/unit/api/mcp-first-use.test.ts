// The MCP SDKs load at their first use, not with the service (issue 33, warm start): the client
// side in a runner's start (mcp-servers/runner-start.ts), the server side at the first request to
// /v1/agents/:id/mcp (api/routes/mcp.ts). Each is one import shared by concurrent first uses: two
// starts of a fresh runner open its program once, and two first MCP requests are both answered.
// This file is its own module graph (vitest isolates test files), so these uses are the first.
import { afterAll, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import { createMcpRunner } from '../../../host/mcp-servers/runner.ts';
import { DEFAULT_MCP_LIMITS } from '../../../host/mcp-servers/types.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { openStore } from '../../../host/store/index.ts';
import { inProcessMcpServer } from '../mcp-servers/in-process-server.ts';

const store = openStore({ path: ':memory:' });
const isolates = createIsolateHost({ workers: 1 });
const { agents } = assembleAgents({ store, sandboxes: createMemoryProvider(), isolates });

afterAll(async () => {
  await agents.close(0);
  await isolates.close();
  store.close();
});

/** An MCP server in this process with one tool, `echo`; `opened` counts its programs. */
const echoServer = () =>
  inProcessMcpServer({
    name: 'echo',
    page: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] },
    call: (params) => ({ content: [{ type: 'text', text: params.arguments.message }] }),
  });

it("a fresh runner's first starts and call share one import and one program", async () => {
  const server = echoServer();
  const runner = createMcpRunner({
    spec: { name: 'echo', transport: 'stdio', command: ['x'] },
    limits: DEFAULT_MCP_LIMITS,
    sandbox: async () => ({ stdio: server }) as unknown as Sandbox,
  });
  try {
    const first = runner.start();
    // The state machine moves at the call, as before the SDK was loaded lazily.
    expect(runner.state()).toBe('starting');
    const [a, b, called] = await Promise.all([
      first,
      runner.start(),
      runner.call('echo', { message: 'hi' }, new AbortController().signal),
    ]);
    expect(a.map((t) => t.name)).toEqual(['echo']);
    expect(b).toEqual(a);
    expect(called.content).toEqual([{ type: 'text', text: 'hi' }]);
    expect(server.opened).toBe(1);
    expect(runner.state()).toBe('ready');
  } finally {
    runner.stop();
  }
});

it('the first two MCP requests, concurrent, are both answered', async () => {
  const app = createApp({ startedAt: Date.now(), version: 'test', store, agents });
  const { apiKey } = await store.tenants.createTenant('tenant-a');
  const created = await app.fetch(
    new Request('http://127.0.0.1/v1/agents', {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      body: '{}',
    }),
  );
  expect(created.status).toBe(201);
  const { id } = (await created.json()) as { id: string };
  const initialize = (n: number) =>
    app.fetch(
      new Request(`http://127.0.0.1/v1/agents/${id}/mcp`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${apiKey}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: n,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 't', version: '1' },
          },
        }),
      }),
    );
  const answers = await Promise.all([initialize(1), initialize(2)]);
  for (const [i, res] of answers.entries()) {
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain(`"id":${i + 1}`);
    expect(text).toContain('"serverInfo"');
  }
});
