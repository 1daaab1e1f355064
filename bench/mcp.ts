// Cost of the agent's MCP endpoint (issue 14): an MCP `tools/call` of `read` (1 KB) through the
// official SDK client over real HTTP on 127.0.0.1, against the same call as a one-call batch of
// `POST /v1/agents/:id/calls`, in the same run, against the same agent (memory sandbox: what is
// measured is the protocol, not the sandbox). Both protocol revisions the endpoint speaks.
// Run: node --no-node-snapshot bench/mcp.ts
// Figures: median per-call time over rounds of sequential calls, and the ratio MCP / POST /calls.
// The machine is shared: repeat runs and read ranges.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { loadConfig } from '../host/config.ts';
import { createMemoryProvider } from '../host/sandbox/memory/provider.ts';
import { startServer } from '../host/serve.ts';
import { openStore } from '../host/store/index.ts';
import { noIsolates } from './lib/no-isolates.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const CALLS = Number(process.env.BENCH_CALLS ?? 200);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

const dataDir = mkdtempSync(join(tmpdir(), 'dsh-bench-mcp-'));
const store = openStore({ dataDir });
const config = loadConfig({ host: '127.0.0.1', port: 0, dataDir, tenantConcurrency: 1000 }, {});
const server = await startServer(config, {
  sandboxes: createMemoryProvider(),
  isolates: noIsolates,
  store,
  log: () => {},
});
const clients: Client[] = [];
try {
  const { apiKey } = await store.tenants.createTenant('bench');
  const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  const created = await fetch(`${server.url}/v1/agents`, { method: 'POST', headers, body: '{}' });
  const agentId = ((await created.json()) as { id: string }).id;
  const post = async (calls: unknown[]) => {
    const r = await fetch(`${server.url}/v1/agents/${agentId}/calls`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ calls }),
    });
    const json = (await r.json()) as { results: { ok: boolean }[] };
    if (!json.results[0]?.ok) throw new Error(`call failed: ${JSON.stringify(json)}`);
  };
  await post([{ id: 'w', name: 'write', arguments: { file_path: 'bench.txt', content: 'x'.repeat(1000) } }]);
  const viaCalls = () => post([{ id: 'r', name: 'read', arguments: { file_path: 'bench.txt' } }]);

  const connect = async (pin: boolean): Promise<Client> => {
    const client = new Client(
      { name: 'dsh-bench', version: '1.0.0' },
      pin ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
    );
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/v1/agents/${agentId}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${apiKey}` } },
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  };
  const eras = [
    { label: '2025 revision', client: await connect(false) },
    { label: '2026-07-28', client: await connect(true) },
  ];
  const viaMcp = (client: Client) => async () => {
    const result = await client.callTool({ name: 'read', arguments: { file_path: 'bench.txt' } });
    if (result.isError) throw new Error(`mcp call failed: ${JSON.stringify(result)}`);
  };

  const timed = async (fn: () => Promise<void>): Promise<number> => {
    const t = performance.now();
    for (let i = 0; i < CALLS; i++) await fn();
    return (performance.now() - t) / CALLS;
  };
  for (let i = 0; i < 30; i++) {
    await viaCalls();
    for (const { client } of eras) await viaMcp(client)();
  }
  const callsMs: number[] = [];
  const mcpMs = eras.map(() => [] as number[]);
  for (let round = 0; round < ROUNDS; round++) {
    callsMs.push(await timed(viaCalls));
    for (const [i, { client }] of eras.entries()) mcpMs[i]?.push(await timed(viaMcp(client)));
  }
  const base = median(callsMs);
  process.stdout.write(
    `POST /calls, one-call batch (read 1 KB): ${(base * 1000).toFixed(0)} µs per call (median of ${ROUNDS} rounds × ${CALLS})\n`,
  );
  for (const [i, { label }] of eras.entries()) {
    const m = median(mcpMs[i] ?? []);
    process.stdout.write(
      `MCP tools/call, ${label.padEnd(13)}: ${(m * 1000).toFixed(0)} µs per call, ` +
        `${((m - base) * 1000).toFixed(0)} µs more than POST /calls, ratio ${(m / base).toFixed(2)}x\n`,
    );
  }
} finally {
  for (const client of clients) await client.close().catch(() => undefined);
  await server.close();
  store.close();
  rmSync(dataDir, { recursive: true, force: true });
}
