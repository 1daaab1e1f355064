// What an Idempotency-Key costs a call batch: a one-call batch (read 1 KB, memory sandbox) over
// real HTTP on 127.0.0.1 against the libsql store in a data directory (a file, its event writer
// thread), sent without a key, with a new key each time (one claim write and one result write per
// batch), and again with a key already done (a replay: one read, nothing run). Alternated in
// rounds in one run, so the machine's load weighs on every figure alike.
// Run: node --no-node-snapshot bench/idempotency.ts
// Figures: median wall time per batch (the kinds interleaved batch by batch) and the ratios to the
// batch without a key; beside them this process's mean CPU time per batch (every thread, the
// fetch client's included).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../host/config.ts';
import { createMemoryProvider } from '../host/sandbox/memory/provider.ts';
import { startServer } from '../host/serve.ts';
import { openStore } from '../host/store/index.ts';
import { noIsolates } from './lib/no-isolates.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const CALLS = Number(process.env.BENCH_CALLS ?? 300);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

const dataDir = mkdtempSync(join(tmpdir(), 'dsh-bench-idem-'));
const store = openStore({ dataDir });
const config = loadConfig({ host: '127.0.0.1', port: 0, dataDir, tenantConcurrency: 1000 }, {});
const server = await startServer(config, {
  sandboxes: createMemoryProvider(),
  isolates: noIsolates,
  store,
  log: () => {},
});
try {
  const { apiKey } = await store.tenants.createTenant('bench');
  const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  const created = await fetch(`${server.url}/v1/agents`, { method: 'POST', headers, body: '{}' });
  const agentId = ((await created.json()) as { id: string }).id;
  const url = `${server.url}/v1/agents/${agentId}/calls`;
  const send = async (calls: unknown[], key?: string) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: key === undefined ? headers : { ...headers, 'Idempotency-Key': key },
      body: JSON.stringify({ calls }),
    });
    const json = (await res.json()) as { results: { ok: boolean }[] };
    if (!json.results?.[0]?.ok) throw new Error(`call failed: ${JSON.stringify(json)}`);
    return res.headers.get('idempotent-replayed') === 'true';
  };
  await send([{ id: 'w', name: 'write', arguments: { file_path: 'bench.txt', content: 'x'.repeat(1000) } }]);
  const read = [{ id: 'r', name: 'read', arguments: { file_path: 'bench.txt' } }];
  let n = 0;
  await send(read, 'done-key');
  const kinds: Record<string, () => Promise<unknown>> = {
    'no key': () => send(read),
    'a new key': () => send(read, `bench-${n++}`),
    'a done key (replay)': async () => {
      if (!(await send(read, 'done-key'))) throw new Error('not a replay');
    },
  };
  for (let i = 0; i < 30; i++) for (const run of Object.values(kinds)) await run();
  // Each batch timed alone and the kinds interleaved call by call: a load that comes and goes on
  // this shared machine weighs on all three alike.
  const wall: Record<string, number[]> = {};
  const cpu: Record<string, number> = {};
  for (let i = 0; i < ROUNDS * CALLS; i++) {
    for (const [kind, run] of Object.entries(kinds)) {
      const before = process.cpuUsage();
      const t = performance.now();
      await run();
      const samples = wall[kind] ?? [];
      samples.push((performance.now() - t) * 1000);
      wall[kind] = samples;
      const used = process.cpuUsage(before);
      cpu[kind] = (cpu[kind] ?? 0) + used.user + used.system;
    }
  }
  const base = median(wall['no key'] as number[]);
  process.stdout.write(
    `one-call batch (read 1 KB) over HTTP, libsql file store, memory sandbox; median of ${ROUNDS * CALLS} sequential batches of each kind, interleaved\n`,
  );
  for (const kind of Object.keys(kinds)) {
    const w = median(wall[kind] as number[]);
    const c = (cpu[kind] as number) / (ROUNDS * CALLS);
    process.stdout.write(
      `  ${kind.padEnd(20)} ${w.toFixed(0).padStart(5)} µs  ratio ${(w / base).toFixed(2)}x  (this process's CPU ${c.toFixed(0)} µs, client included)\n`,
    );
  }
  const rows = store.db.prepare('SELECT count(*) AS n FROM call_batches').all() as { n: number }[];
  process.stdout.write(`  rows in call_batches: ${rows[0]?.n} (one per key)\n`);
} finally {
  await server.close();
  store.close();
  rmSync(dataDir, { recursive: true, force: true });
}
