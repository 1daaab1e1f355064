// The cost of forwarding between replicas (host/api/forward): the same requests sent straight to
// the replica that owns the agent and through another replica that forwards them, in the same run.
// Run: node --no-node-snapshot bench/forward.ts
// Two control-plane apps on 127.0.0.1 in this process over one store and agent service (memory
// sandboxes): the owner (checks replica signatures) and the front (its route sends every request
// for an agent to the owner). The client runs in a process of its own (node:http, keep-alive,
// sequential), so its work is not in the servers' way. Figures, each the median of ROUNDS rounds:
//  - per request, wall time at the client and this process's CPU time (both replicas: the
//    difference is what forwarding costs, the front's middleware and key check included), for
//    GET /v1/agents/:id and a one-call batch (POST /calls, read 1 KB);
//  - per streamed SSE event (~200 bytes each, EVENTS of them, one per event-loop turn), from a
//    bare owner endpoint straight and through a front that only forwards: the forwarding of a
//    stream, without the log behind a real event stream.
// Also the choice behind request.ts: node:http with a keep-alive Agent versus the built-in fetch,
// per forwarded request. The machine's load (os.loadavg) is printed with the figures.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { assembleAgents } from '../host/agents/assemble.ts';
import { createApp } from '../host/api/app.ts';
import type { ApiEnv } from '../host/api/env.ts';
import { createForwarder, forwardByRoute, type RouteOf } from '../host/api/forward/route.ts';
import { replicaKey } from '../host/api/forward/sign.ts';
import { upgradeTunnels } from '../host/api/forward/upgrade.ts';
import { verifyForwarded } from '../host/api/forward/verify.ts';
import { createWebSocketServer } from '../host/api/routes/terminals.ts';
import { createMemoryProvider } from '../host/sandbox/memory/provider.ts';
import { openStore } from '../host/store/index.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 500);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};
const load = (): string =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

/**
 * The client in its own process: `requests` mode sends n sequential keep-alive requests after 20
 * to warm up and prints the mean µs per request; `stream` mode reads one response to its end and
 * prints the µs it took.
 */
const CLIENT = `
const http = require('node:http');
const [mode, url, method, key, body, n] = process.argv.slice(1);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const headers = { authorization: 'Bearer ' + key, 'content-type': 'application/json' };
if (method === 'POST') headers['content-length'] = Buffer.byteLength(body);
const one = () => new Promise((resolve, reject) => {
  const req = http.request(url, { method, agent, headers }, (res) => {
    let bytes = 0;
    res.on('data', (d) => { bytes += d.length; });
    res.on('end', () => (res.statusCode < 300 ? resolve(bytes) : reject(new Error(url + ' ' + res.statusCode))));
  });
  req.on('error', reject);
  req.end(method === 'POST' ? body : undefined);
});
(async () => {
  if (mode === 'stream') {
    await one();
    process.stdout.write('S\\n');
    const start = performance.now();
    await one();
    process.stdout.write(String((performance.now() - start) * 1000));
  } else {
    for (let i = 0; i < 20; i++) await one();
    process.stdout.write('S\\n');
    const start = performance.now();
    for (let i = 0; i < Number(n); i++) await one();
    process.stdout.write(String(((performance.now() - start) * 1000) / Number(n)));
  }
  agent.destroy();
})().catch((e) => { console.error(String(e)); process.exit(1); });
`;

/**
 * Runs the client; resolves with its figure (µs) and this process's CPU µs while it measured (from
 * its start mark, after its warm-up, to its exit).
 */
const client = (
  mode: 'requests' | 'stream',
  url: string,
  method: string,
  key: string,
  body: string,
  n = REQUESTS,
): Promise<{ wall: number; cpu: number }> =>
  new Promise((resolve, reject) => {
    let before: NodeJS.CpuUsage | undefined;
    const child = spawn(process.execPath, ['-e', CLIENT, mode, url, method, key, body, String(n)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (before === undefined && out.includes('S\n')) before = process.cpuUsage();
    });
    child.on('exit', (code) => {
      const used = process.cpuUsage(before);
      if (code !== 0 || before === undefined) return reject(new Error(`client exited ${code}`));
      resolve({ wall: Number(out.slice(out.indexOf('S\n') + 2)), cpu: used.user + used.system });
    });
  });

/** Serves `app` on 127.0.0.1 as serve-http.ts does (upgrade tunnels attached). */
const listen = (app: Hono<ApiEnv>): Promise<{ server: Server; url: string }> => {
  const tunnels = upgradeTunnels(app.fetch);
  return new Promise((resolve) => {
    const server = serve(
      {
        fetch: tunnels.fetch,
        hostname: '127.0.0.1',
        port: 0,
        websocket: { server: createWebSocketServer() },
      },
      () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    ) as Server;
    tunnels.attach(server);
  });
};

const close = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** Direct and forwarded, alternated per round: medians of wall µs per unit and CPU µs per unit. */
const compare = async (
  direct: () => Promise<{ wall: number; cpu: number }>,
  forwarded: () => Promise<{ wall: number; cpu: number }>,
  units: number,
) => {
  const d = { wall: [] as number[], cpu: [] as number[] };
  const f = { wall: [] as number[], cpu: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const a = await direct();
    d.wall.push(a.wall);
    d.cpu.push(a.cpu / units);
    const b = await forwarded();
    f.wall.push(b.wall);
    f.cpu.push(b.cpu / units);
  }
  return {
    direct: { wall: median(d.wall), cpu: median(d.cpu) },
    forwarded: { wall: median(f.wall), cpu: median(f.cpu) },
  };
};

const row = (what: string, r: Awaited<ReturnType<typeof compare>>, unit: string, digits = 0): string =>
  `${what}: direct ${r.direct.wall.toFixed(digits)} µs, forwarded ${r.forwarded.wall.toFixed(digits)} µs ` +
  `(adds ${(r.forwarded.wall - r.direct.wall).toFixed(digits)} µs, ratio ${(r.forwarded.wall / r.direct.wall).toFixed(2)}x) per ${unit} at the client; ` +
  `this process's CPU ${r.direct.cpu.toFixed(digits)} µs direct, ${r.forwarded.cpu.toFixed(digits)} µs forwarded ` +
  `(adds ${(r.forwarded.cpu - r.direct.cpu).toFixed(digits)} µs) per ${unit}\n`;

const key = replicaKey(randomBytes(32));
const dataDir = mkdtempSync(join(tmpdir(), 'dsh-bench-forward-'));
const store = openStore({ dataDir });
const sandboxes = createMemoryProvider();
const { agents } = assembleAgents({ store, sandboxes });
const limits = { tenantConcurrency: 1000 };
const base = { startedAt: Date.now(), version: 'bench', store, agents, limits };

process.stdout.write(`load (1, 5, 15 min) before: ${load()}\n`);
const owner = await listen(createApp({ ...base, replicas: { key } }));
const forwarder = createForwarder({ replica: { id: 'front', key } });
const toOwner: RouteOf = (_c, r) =>
  r.agentId === undefined ? { kind: 'local' } : { kind: 'forward', url: owner.url, replicaId: 'owner' };
const front = await listen(createApp({ ...base, replicas: { key, route: toOwner, forwarder } }));

// A bare owner that streams EVENTS events of ~200 bytes and a front that only forwards it.
const event = new TextEncoder().encode(
  `event: tool.result\ndata: ${JSON.stringify({ x: 'y'.repeat(160) })}\n\n`,
);
const sseOwnerApp = new Hono<ApiEnv>();
sseOwnerApp.use(verifyForwarded({ key }));
sseOwnerApp.get('/v1/agents/:id/events', () => {
  let sent = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      // One event per event-loop turn, as a log's events come: each its own write, not a burst
      // the transport would merge into a few large chunks.
      async pull(controller) {
        await new Promise((resolve) => setImmediate(resolve));
        if (sent++ < EVENTS) controller.enqueue(event);
        else controller.close();
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
});
sseOwnerApp.get('/ping', (c) => c.json({ ok: true }));
const sseOwner = await listen(sseOwnerApp);
const sseFrontApp = new Hono<ApiEnv>();
sseFrontApp.use(
  forwardByRoute({
    route: () => ({ kind: 'forward', url: sseOwner.url, replicaId: 'owner' }),
    forwarder,
  }),
);
const sseFront = await listen(sseFrontApp);

try {
  const { apiKey } = await store.tenants.createTenant('bench');
  const created = await fetch(`${owner.url}/v1/agents`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: '{}',
  });
  const agentId = ((await created.json()) as { id: string }).id;
  const write = JSON.stringify({
    calls: [{ id: 'w', name: 'write', arguments: { file_path: 'bench.txt', content: 'x'.repeat(1000) } }],
  });
  await fetch(`${owner.url}/v1/agents/${agentId}/calls`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: write,
  });
  const read = JSON.stringify({ calls: [{ id: 'r', name: 'read', arguments: { file_path: 'bench.txt' } }] });
  const path = `/v1/agents/${agentId}`;
  process.stdout.write(
    `two replicas in this process, the client in its own (node:http keep-alive, sequential); median of ${ROUNDS} rounds × ${REQUESTS} requests\n`,
  );
  const get = await compare(
    () => client('requests', `${owner.url}${path}`, 'GET', apiKey, ''),
    () => client('requests', `${front.url}${path}`, 'GET', apiKey, ''),
    REQUESTS,
  );
  process.stdout.write(row('  GET /v1/agents/:id', get, 'request'));
  const calls = await compare(
    () => client('requests', `${owner.url}${path}/calls`, 'POST', apiKey, read),
    () => client('requests', `${front.url}${path}/calls`, 'POST', apiKey, read),
    REQUESTS,
  );
  process.stdout.write(row('  POST /calls (one call: read 1 KB)', calls, 'request'));
  const sse = await compare(
    async () => {
      const r = await client('stream', `${sseOwner.url}${path}/events`, 'GET', apiKey, '');
      return { wall: r.wall / EVENTS, cpu: r.cpu };
    },
    async () => {
      const r = await client('stream', `${sseFront.url}${path}/events`, 'GET', apiKey, '');
      return { wall: r.wall / EVENTS, cpu: r.cpu };
    },
    EVENTS,
  );
  process.stdout.write(row(`  SSE, ${EVENTS} events of ${event.length} bytes`, sse, 'event', 2));

  // The transport choice of request.ts: the owner's bare answer forwarded by node:http with a
  // keep-alive Agent versus the built-in fetch (its global keep-alive pool), in this process.
  const n = REQUESTS * 2;
  const { Agent, request } = await import('node:http');
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const target = `${sseOwner.url}/ping`;
  const viaHttp = () =>
    new Promise<void>((resolve, reject) => {
      const req = request(target, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end();
    });
  const viaFetch = async () => {
    await (await fetch(target)).arrayBuffer();
  };
  const per = async (fn: () => Promise<void>): Promise<[number, number]> => {
    for (let i = 0; i < 100; i++) await fn();
    const cpu = process.cpuUsage();
    const t = performance.now();
    for (let i = 0; i < n; i++) await fn();
    const used = process.cpuUsage(cpu);
    return [((performance.now() - t) * 1000) / n, (used.user + used.system) / n];
  };
  const samples = { http: [] as [number, number][], fetch: [] as [number, number][] };
  for (let round = 0; round < ROUNDS; round++) {
    samples.http.push(await per(viaHttp));
    samples.fetch.push(await per(viaFetch));
  }
  const [hw, hc] = [median(samples.http.map(([w]) => w)), median(samples.http.map(([, c]) => c))];
  const [fw, fc] = [median(samples.fetch.map(([w]) => w)), median(samples.fetch.map(([, c]) => c))];
  process.stdout.write(
    `  upstream client, per request to a bare owner (both ends in this process): node:http + keep-alive Agent ${hw.toFixed(0)} µs wall, ${hc.toFixed(0)} µs CPU; built-in fetch ${fw.toFixed(0)} µs wall, ${fc.toFixed(0)} µs CPU\n`,
  );
  agent.destroy();
} finally {
  forwarder.close();
  for (const s of [front, owner, sseFront, sseOwner]) await close(s.server);
  await agents.close(0);
  store.close();
  rmSync(dataDir, { recursive: true, force: true });
  process.stdout.write(`load (1, 5, 15 min) after: ${load()}\n`);
}
