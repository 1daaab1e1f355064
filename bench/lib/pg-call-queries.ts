// The statements one HTTP call (bench/store-backends.ts part 2: a one-call batch reading 1 KB,
// memory sandbox) sends to PostgreSQL, in order, with when each started and ended relative to the
// request and whether it ended before the response arrived ('during') or after. A tool for
// reading the request path, not a figure of the bench (bench/lib: `npm run bench` does not run it).
// Run: node --no-node-snapshot bench/lib/pg-call-queries.ts; BACKEND=libsql runs the loop on libsql,
// ROUNDS=n lists n single calls (default 2).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../host/config.ts';
import { createMemoryProvider } from '../../host/sandbox/memory/provider.ts';
import { startServer } from '../../host/serve.ts';
import { openStore } from '../../host/store/index.ts';
import { openPgStore } from '../../host/store/pg/index.ts';
import { findPostgresBin } from '../../scripts/setup/postgres.ts';
import { postgresUrl, startPostgresCluster } from '../../tests/helpers/postgres-cluster.ts';
import { noIsolates } from './no-isolates.ts';
import { readOverHttp } from './store-workloads.ts';

const bin = await findPostgresBin();
if (bin === undefined) throw new Error('no PostgreSQL binaries: run `npm run setup`');
for (const name of Object.keys(process.env)) if (name.startsWith('PG')) delete process.env[name];
const cluster = startPostgresCluster(bin, { durable: true });
const dir = mkdtempSync(join(tmpdir(), 'dsh-pg-call-'));

interface Sent {
  sql: string;
  start: number;
  end?: number;
}
let log: Sent[] | undefined;
// Every statement of every connection (the pool's and a transaction's client) goes through Client.query.
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const result = query.apply(this, args);
  const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
  if (log !== undefined && text !== undefined && result instanceof Promise) {
    const sent: Sent = { sql: text.replace(/\s+/g, ' ').trim(), start: performance.now() };
    log.push(sent);
    void result.then(
      () => {
        sent.end = performance.now();
      },
      () => {
        sent.end = performance.now();
      },
    );
  }
  return result;
} as typeof pg.Client.prototype.query;

try {
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE call_queries TEMPLATE template0 ENCODING 'UTF8'`);
  await admin.end();
  // BACKEND=libsql: the same loop on a libsql file, for comparison (no statements to list).
  const store =
    process.env.BACKEND === 'libsql'
      ? await openStore({ path: join(dir, 'store.db'), secretsKey: Buffer.alloc(32, 7) })
      : await openPgStore({
          url: postgresUrl(cluster.socketDir, 'call_queries'),
          secretsKey: Buffer.alloc(32, 7),
        });
  // How long each append() takes to answer (the pipeline awaits its verdict before answering?).
  const appends: number[] = [];
  const append = store.events.append.bind(store.events);
  store.events.append = (inputs) => {
    const t = performance.now();
    const answered = append(inputs);
    void answered.then(
      () => appends.push(performance.now() - t),
      () => {},
    );
    return answered;
  };
  const config = loadConfig({ host: '127.0.0.1', port: 0, dataDir: dir, tenantConcurrency: 1000 }, {});
  const server = await startServer(config, {
    sandboxes: createMemoryProvider(),
    isolates: noIsolates,
    store,
    log: () => {},
  });
  try {
    const call = await readOverHttp(server.url, store);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // A loop as the bench's: per call, its time, the statements sent and the main thread's CPU.
    for (let round = 0; round < 3; round++) {
      log = [];
      const cpu = process.cpuUsage();
      const t = performance.now();
      for (let i = 0; i < 300; i++) await call();
      const per = ((performance.now() - t) * 1000) / 300;
      const used = process.cpuUsage(cpu);
      const kinds = new Map<string, number>();
      for (const s of log) kinds.set(s.sql.slice(0, 30), (kinds.get(s.sql.slice(0, 30)) ?? 0) + 1);
      console.log(
        `loop: ${per.toFixed(0)} µs per call, main-thread CPU ${((used.user + used.system) / 300).toFixed(0)} µs per call, ${(log.length / 300).toFixed(2)} statements per call`,
        JSON.stringify(Object.fromEntries(kinds)),
      );
      log = undefined;
      const sorted = appends.splice(0).sort((a, b) => a - b);
      console.log(
        `  append() answered: median ${((sorted[sorted.length >> 1] ?? 0) * 1000).toFixed(0)} µs, p90 ${((sorted[Math.floor(sorted.length * 0.9)] ?? 0) * 1000).toFixed(0)} µs over ${sorted.length}`,
      );
    }
    for (let round = 0; round < Number(process.env.ROUNDS ?? 2); round++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      log = [];
      const t = performance.now();
      await call();
      const answered = performance.now() - t;
      // Let what the call left running finish, so its statements are listed too.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const sent = log;
      log = undefined;
      console.log(`\n=== call answered after ${(answered * 1000).toFixed(0)} µs; ${sent.length} statements`);
      for (const s of sent) {
        const from = ((s.start - t) * 1000).toFixed(0).padStart(6);
        const to = s.end === undefined ? '     ?' : ((s.end - t) * 1000).toFixed(0).padStart(6);
        const waited = s.end !== undefined && s.end - t <= answered ? 'during' : 'after ';
        console.log(`${from} → ${to} µs  ${waited}  ${s.sql.slice(0, 160)}`);
      }
    }
  } finally {
    await server.close();
    await store.close();
  }
} finally {
  cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
