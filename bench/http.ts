// HTTP cost of the control plane: a one-call batch sent over real HTTP on 127.0.0.1 versus the same
// call made in-process through the agent service, in the same run, against the same agent.
// Run: node --no-node-snapshot bench/http.ts            (memory sandbox: isolates the HTTP cost)
//      BENCH_DOCKER=1 node --no-node-snapshot bench/http.ts   (also on a real container; needs DSH_SANDBOX_IMAGE)
// Figures: median per-call time over rounds of sequential calls, and the ratio HTTP / in-process;
// beside them the same client (fetch, in this process) and bytes against a bare node:http server:
// the wall-time floor of any HTTP server here, which the 'HTTP adds' figure includes.
// The same three with the client in a process of its own, as a real client is (node:http,
// keep-alive, sequential): here the client's own work (fetch's, in the figures above, shares this
// process's event loop) is not in the server's way, and the server's is not in the client's.
// Then where the HTTP cost goes: this process's CPU time per request while a client in another
// process (node:http, keep-alive, sequential) sends them: a bare node:http server answering the same
// bytes (the transport floor), GET /v1/health (Hono and the global middleware), GET /v1/agents/:id
// (plus authentication and the tenant middleware), POST /calls (plus the body, its validation, the
// call and its durable log events), and the in-process call alone. CPU time, unlike wall time,
// holds up on a loaded machine.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assembleAgents } from '../host/agents/assemble.ts';
import { loadConfig } from '../host/config.ts';
import { createMemoryProvider } from '../host/sandbox/memory/provider.ts';
import type { SandboxProvider } from '../host/sandbox/types.ts';
import { startServer } from '../host/serve.ts';
import { openStore } from '../host/store/index.ts';
import { noIsolates } from './lib/no-isolates.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const CALLS = Number(process.env.BENCH_CALLS ?? 300);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

const CPU_REQUESTS = Number(process.env.BENCH_CPU_REQUESTS ?? 500);
/**
 * A client in its own process: `n` sequential keep-alive requests after 20 to warm up; prints the
 * mean wall time of the `n` in µs, then exits.
 */
const CLIENT = `
const http = require('node:http');
const [url, method, key, body, n] = process.argv.slice(1);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const headers = { authorization: 'Bearer ' + key, 'content-type': 'application/json' };
if (method === 'POST') headers['content-length'] = Buffer.byteLength(body);
const one = () => new Promise((resolve, reject) => {
  const req = http.request(url, { method, agent, headers }, (res) => {
    res.resume();
    res.on('end', () => (res.statusCode < 300 ? resolve() : reject(new Error(url + ' ' + res.statusCode))));
  });
  req.on('error', reject);
  req.end(method === 'POST' ? body : undefined);
});
(async () => {
  for (let i = 0; i < 20; i++) await one();
  const start = performance.now();
  for (let i = 0; i < Number(n); i++) await one();
  process.stdout.write(String(((performance.now() - start) * 1000) / Number(n)));
  agent.destroy();
})().catch((e) => { console.error(String(e)); process.exit(1); });
`;
/** Runs the client in its own process; resolves with its mean wall time per request in µs. */
const hammer = (url: string, method: string, key: string, body: string, n = CPU_REQUESTS): Promise<number> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CLIENT, url, method, key, body, String(n)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('exit', (code) =>
      code === 0 ? resolve(Number(out)) : reject(new Error(`client exited ${code}`)),
    );
  });

const measure = async (label: string, sandboxes: SandboxProvider): Promise<void> => {
  const dataDir = mkdtempSync(join(tmpdir(), 'dsh-bench-http-'));
  const store = openStore({ dataDir });
  const config = loadConfig({ host: '127.0.0.1', port: 0, dataDir, tenantConcurrency: 1000 }, {});
  const server = await startServer(config, { sandboxes, isolates: noIsolates, store, log: () => {} });
  // The in-process path uses its own service over the same store and provider: same agent, same pipeline.
  const { agents } = assembleAgents({ store, sandboxes });
  try {
    const { apiKey, id: tenantId } = await store.tenants.createTenant('bench');
    const res = await fetch(`${server.url}/v1/agents`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      body: '{}',
    });
    const agentId = ((await res.json()) as { id: string }).id;
    const agent = await agents.get(tenantId, agentId);
    const write = await agents.call(
      agent,
      [{ id: 'w', name: 'write', arguments: { file_path: 'bench.txt', content: 'x'.repeat(1000) } }],
      { signal: new AbortController().signal },
    );
    if (!write[0]?.ok) throw new Error(`setup failed: ${JSON.stringify(write[0])}`);
    const call = { id: 'r', name: 'read', arguments: { file_path: 'bench.txt' } };
    const body = JSON.stringify({ calls: [call] });
    const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
    const viaHttp = async () => {
      const r = await fetch(`${server.url}/v1/agents/${agentId}/calls`, { method: 'POST', headers, body });
      const json = (await r.json()) as { results: { ok: boolean }[] };
      if (!json.results[0]?.ok) throw new Error('http call failed');
    };
    const inProcess = async () => {
      const [result] = await agents.call(agent, [call], { signal: new AbortController().signal });
      if (!result?.ok) throw new Error('in-process call failed');
    };
    // The transport's floor: the same client (fetch) and bytes against a bare node:http server.
    const lastBody = await (
      await fetch(`${server.url}/v1/agents/${agentId}/calls`, { method: 'POST', headers, body })
    ).text();
    const floorServer = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(lastBody));
    });
    await new Promise<void>((resolve) => floorServer.listen(0, '127.0.0.1', resolve));
    const floorUrl = `http://127.0.0.1:${(floorServer.address() as { port: number }).port}`;
    const viaFloor = async () => {
      await (await fetch(`${floorUrl}/x`, { method: 'POST', headers, body })).json();
    };
    const n = label === 'docker' ? Math.min(CALLS, 100) : CALLS;
    for (let i = 0; i < 30; i++) {
      await viaHttp();
      await inProcess();
      await viaFloor();
    }
    const httpMs: number[] = [];
    const localMs: number[] = [];
    const floorMs: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      let t = performance.now();
      for (let i = 0; i < n; i++) await inProcess();
      localMs.push((performance.now() - t) / n);
      t = performance.now();
      for (let i = 0; i < n; i++) await viaHttp();
      httpMs.push((performance.now() - t) / n);
      t = performance.now();
      for (let i = 0; i < n; i++) await viaFloor();
      floorMs.push((performance.now() - t) / n);
    }
    const h = median(httpMs);
    const l = median(localMs);
    const f = median(floorMs);
    process.stdout.write(
      `${label.padEnd(7)} one-call batch (read 1 KB): in-process ${(l * 1000).toFixed(0)} µs, HTTP ${(h * 1000).toFixed(0)} µs, ` +
        `HTTP adds ${((h - l) * 1000).toFixed(0)} µs, ratio ${(h / l).toFixed(2)}x (median of ${ROUNDS} rounds × ${n} calls); ` +
        `the same fetch to a bare node:http server answering the same bytes ${(f * 1000).toFixed(0)} µs (HTTP adds over it and the call ${((h - l - f) * 1000).toFixed(0)} µs)\n`,
    );
    if (label === 'memory') {
      // The client in a process of its own: the same rounds, alternated, each client process sending
      // n requests after its warm-up (the in-process call as above, in this process).
      const apart = { http: [] as number[], floor: [] as number[], local: [] as number[] };
      const callsUrl = `${server.url}/v1/agents/${agentId}/calls`;
      for (let round = 0; round < ROUNDS; round++) {
        const t = performance.now();
        for (let i = 0; i < n; i++) await inProcess();
        apart.local.push(((performance.now() - t) * 1000) / n);
        apart.http.push(await hammer(callsUrl, 'POST', apiKey, body, n));
        apart.floor.push(await hammer(`${floorUrl}/x`, 'POST', apiKey, body, n));
      }
      const [ah, af, al] = [median(apart.http), median(apart.floor), median(apart.local)];
      process.stdout.write(
        `${label.padEnd(7)} the client in its own process (node:http, keep-alive): in-process ${al.toFixed(0)} µs, HTTP ${ah.toFixed(0)} µs, ` +
          `HTTP adds ${(ah - al).toFixed(0)} µs, ratio ${(ah / al).toFixed(2)}x (median of ${ROUNDS} rounds × ${n} calls); ` +
          `the same client to a bare node:http server answering the same bytes ${af.toFixed(0)} µs (HTTP adds over it and the call ${(ah - al - af).toFixed(0)} µs)\n`,
      );
      /** Process CPU per request (every thread: the log's writer, GC helpers) and the main thread's. */
      const perRequest = async (fn: () => Promise<unknown>): Promise<[number, number]> => {
        const before = process.cpuUsage();
        const mainBefore = process.threadCpuUsage();
        await fn();
        const used = process.cpuUsage(before);
        const main = process.threadCpuUsage(mainBefore);
        return [(used.user + used.system) / CPU_REQUESTS, (main.user + main.system) / CPU_REQUESTS];
      };
      const rows: Array<[string, () => Promise<unknown>]> = [
        ['bare node:http, same bytes (floor)', () => hammer(`${floorUrl}/x`, 'POST', apiKey, body)],
        ['GET /v1/health', () => hammer(`${server.url}/v1/health`, 'GET', apiKey, body)],
        [
          'GET /v1/agents/:id (auth)',
          () => hammer(`${server.url}/v1/agents/${agentId}`, 'GET', apiKey, body),
        ],
        [
          'POST /v1/agents/:id/calls',
          () => hammer(`${server.url}/v1/agents/${agentId}/calls`, 'POST', apiKey, body),
        ],
        [
          'in-process call alone',
          async () => {
            for (let i = 0; i < CPU_REQUESTS; i++) await inProcess();
          },
        ],
      ];
      process.stdout.write(
        `where it goes: this process's CPU time per request (${CPU_REQUESTS} requests each)\n`,
      );
      for (const [what, fn] of rows) {
        const samples: [number, number][] = [];
        for (let round = 0; round < 3; round++) samples.push(await perRequest(fn));
        const all = median(samples.map(([a]) => a));
        const main = median(samples.map(([, m]) => m));
        process.stdout.write(
          `  ${what.padEnd(36)} ${all.toFixed(0)} µs (main thread ${main.toFixed(0)} µs)\n`,
        );
      }
    }
    floorServer.close();
    await agents.delete(tenantId, agentId).catch(() => undefined);
  } finally {
    await server.close();
    store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
};

await measure('memory', createMemoryProvider());
if (process.env.BENCH_DOCKER === '1') {
  const image = process.env.DSH_SANDBOX_IMAGE;
  if (!image) throw new Error('BENCH_DOCKER=1 needs DSH_SANDBOX_IMAGE');
  const { createDockerProvider } = await import('../host/sandbox/docker/index.ts');
  const provider = createDockerProvider({
    image,
    prefix: 'dshbench',
    instance: `b${process.pid}`,
    idleMs: 0,
  });
  try {
    await measure('docker', provider);
  } finally {
    await provider.close();
  }
}
