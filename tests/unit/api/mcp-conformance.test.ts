// The MCP conformance suite (@modelcontextprotocol/conformance, a dev dependency: nothing is fetched
// at run time) against one agent's MCP endpoint, every scenario (`--suite all`), with the checks
// that do not apply listed, one by one and with the reason, in fixtures/mcp-conformance-baseline.yml.
// An unlisted failure and a listed check that passes both fail this test. The suite has no header
// flag, so a loopback proxy of the test's own adds the tenant's bearer key; the endpoint is the
// service's, unchanged. Also here: the endpoint refuses a browser Origin from elsewhere (DNS
// rebinding) and admits this machine's and the operator's listed ones.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';

const CLI = fileURLToPath(
  new URL('../../../node_modules/@modelcontextprotocol/conformance/dist/index.js', import.meta.url),
);
const BASELINE = fileURLToPath(new URL('./fixtures/mcp-conformance-baseline.yml', import.meta.url));
const LISTED_ORIGIN = 'https://console.example.test';

const store = openStore({ path: ':memory:' });
const isolates = createIsolateHost({ workers: 1 });
const { agents } = assembleAgents({ store, sandboxes: createMemoryProvider(), isolates });
const app = createApp({ startedAt: Date.now(), version: 'test', store, agents, mcpOrigins: [LISTED_ORIGIN] });
const key = (await store.tenants.createTenant('conformance')).apiKey;
let server: ServerType;
let proxy: Server;
let base = '';
let agentId = '';

const listen = (s: Server | ServerType): Promise<number> =>
  new Promise((resolve) => {
    const done = () => resolve((s.address() as AddressInfo).port);
    if (s.listening) done();
    else s.once('listening', done);
  });

beforeAll(async () => {
  server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
  const port = await listen(server);
  base = `http://127.0.0.1:${port}`;
  const created = await fetch(`${base}/v1/agents`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ preset: 'standard' }),
  });
  agentId = ((await created.json()) as { id: string }).id;
  // Forwards everything, Host and Origin included, and adds only the bearer key.
  proxy = createServer((req, res) => {
    const upstream = request(
      {
        host: '127.0.0.1',
        port,
        method: req.method,
        path: `/v1/agents/${agentId}/mcp`,
        headers: { ...req.headers, authorization: `Bearer ${key}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  proxy.listen(0, '127.0.0.1');
  await listen(proxy);
});

afterAll(async () => {
  // The suite's HTTP client keeps connections alive: close them, or close() waits for them.
  proxy.closeAllConnections();
  await new Promise<void>((resolve) => proxy.close(() => resolve()));
  (server as Server).closeAllConnections();
  await agents.close(0);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await isolates.close();
  store.close();
}, 30_000);

describe('the MCP conformance suite against an agent', () => {
  it('passes every check that applies, and the baseline lists exactly those that do not', async () => {
    const out = mkdtempSync(join(tmpdir(), 'dsh-mcp-conformance-'));
    const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
    try {
      const run = await promisify(execFile)(
        process.execPath,
        [CLI, 'server', '--url', url, '--suite', 'all', '--expected-failures', BASELINE, '-o', out],
        { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } },
      ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(
          `conformance failed:\n${(error.stdout ?? '').slice(-6000)}\n${error.stderr ?? error.message}`,
        );
      });
      // The scenarios that matter most ran and passed (a silent skip would not show otherwise).
      for (const scenario of [
        'server-initialize',
        'tools-list',
        'dns-rebinding-protection',
        'http-header-validation',
      ])
        expect(run.stdout).toMatch(new RegExp(`✓ ${scenario}: \\d+ passed, 0 failed`));
      expect(readFileSync(BASELINE, 'utf8')).not.toContain('dns-rebinding');
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 180_000);
});

describe('browser origins (DNS-rebinding protection)', () => {
  const initialize = (origin?: string) =>
    fetch(`${base}/v1/agents/${agentId}/mcp`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${key}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...(origin === undefined ? {} : { Origin: origin }),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });

  it('refuses a page from elsewhere with 403 and a JSON-RPC error, before anything is listed', async () => {
    for (const origin of ['http://evil.example.com', 'http://127.0.0.1.evil.example', 'null', 'file://x']) {
      const res = await initialize(origin);
      expect(res.status).toBe(403);
      const body = (await res.json()) as { error: { message: string } };
      expect(body.error.message).toContain('DSH_MCP_ORIGINS');
    }
  });

  it("admits clients without an Origin, this machine's pages and the listed origins", async () => {
    for (const origin of [
      undefined,
      'http://localhost:6274',
      'http://127.0.0.1:3000',
      'http://[::1]:80',
      LISTED_ORIGIN,
    ]) {
      const res = await initialize(origin);
      expect(res.status).toBe(200);
      await res.body?.cancel();
    }
  });
});
