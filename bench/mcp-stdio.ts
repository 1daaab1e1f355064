// What a tool of a stdio MCP server in the sandbox costs: `node --no-node-snapshot bench/mcp-stdio.ts [reps]`
// (image: DSH_SANDBOX_IMAGE, else the one setup builds). A control plane on loopback with the
// Docker provider; one agent with the reference server (mcp-server-everything) registered.
// Measured through POST /calls, each against the baseline in the same run:
// 1. `mcp__everything__echo` (pipeline → our MCP client → sandboxd's pipes → the server) vs a
//    `bash` call of `echo` (pipeline → sandboxd exec) vs `read` of a small file (one sandboxd op);
// 2. the server's registration (start in the container, initialize, tools/list).
// Prints medians and p95 of sequential calls. Everything it makes is deleted at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../host/config.ts';
import { startServer } from '../host/serve.ts';

const REPS = Number(process.argv[2] ?? 100);
const dataDir = mkdtempSync(join(tmpdir(), 'dsh-bench-mcp-'));
const image =
  loadConfig().sandboxImage ?? (await (await import('../scripts/setup/image.ts')).ensureSandboxImage()).tag;
const config = loadConfig(
  {
    host: '127.0.0.1',
    port: 0,
    dataDir,
    poolSize: 0,
    isolateWorkers: 1,
    diskQuota: false,
    sandboxImage: image,
  },
  {},
);
const server = await startServer(config, { log: () => {} });
const key = (await server.store.tenants.createTenant('bench-mcp')).apiKey;

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)] ?? Number.NaN;
const p95 = (xs: number[]) => sorted(xs)[Math.floor(xs.length * 0.95)] ?? Number.NaN;
const ms = (x: number) => `${x.toFixed(2)} ms`;

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json().catch(() => undefined)) as { results?: Array<{ ok: boolean }> } & Record<
    string,
    unknown
  >;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
};

try {
  const agent = (await api('POST', '/v1/agents', {})) as { id: string };
  const call = async (name: string, args: unknown) => {
    const { results } = await api('POST', `/v1/agents/${agent.id}/calls`, {
      calls: [{ id: 'b', name, arguments: args }],
    });
    if (!results?.[0]?.ok) throw new Error(`${name} failed: ${JSON.stringify(results)}`);
  };
  const time = async (fn: () => Promise<unknown>, n = REPS) => {
    for (let i = 0; i < 3; i++) await fn();
    const xs: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await fn();
      xs.push(performance.now() - t);
    }
    return xs;
  };
  await call('write', { file_path: 'small.txt', content: 'hello\n' });
  const t0 = performance.now();
  await api('POST', `/v1/agents/${agent.id}/mcp-servers`, {
    name: 'everything',
    command: ['mcp-server-everything'],
  });
  const registration = performance.now() - t0;

  const mcp = await time(() => call('mcp__everything__echo', { message: 'hi' }));
  const bash = await time(() => call('bash', { command: 'echo hi', description: 'bench' }));
  const read = await time(() => call('read', { file_path: 'small.txt' }));
  console.log(`reps: ${REPS} sequential calls through POST /calls`);
  console.log(
    `mcp__everything__echo (stdio MCP server in the sandbox): median ${ms(median(mcp))}, p95 ${ms(p95(mcp))}`,
  );
  console.log(
    `bash "echo hi" (baseline, sandboxd exec):              median ${ms(median(bash))}, p95 ${ms(p95(bash))}`,
  );
  console.log(
    `read of a 6-byte file (baseline, one sandboxd op):     median ${ms(median(read))}, p95 ${ms(p95(read))}`,
  );
  console.log(`ratio MCP echo / bash echo: ${(median(mcp) / median(bash)).toFixed(2)}`);
  console.log(`registration (start, initialize, tools/list): ${ms(registration)}`);
  await api('DELETE', `/v1/agents/${agent.id}`);
} finally {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
}
