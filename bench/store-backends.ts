// The store's two backends side by side, `node --no-node-snapshot bench/store-backends.ts`: the same
// workloads, in one run, on libsql (the default: a WAL file, the log's writer thread) and on
// PostgreSQL (a private cluster this bench starts on a unix socket, with PostgreSQL's default
// durability: fsync and synchronous_commit on, as an operator's server has them).
// 1. A 1,000-call batch through the tool pipeline with the store's durable log: the batch's answer,
//    the main-thread CPU of the batch and its log writes (what other requests wait behind; the
//    "added" column subtracts the same batch with no log), and the time until its events are durable.
// 2. A one-call batch over HTTP (a `read` on the memory sandbox, the service on each store).
// 3. Session search over 100k events of one tenant (plus 20k of another the search never sees).
// 4. Agent create (the store's row, as POST /v1/agents makes it).
// Needs PostgreSQL's binaries (npm run setup installs them); prints medians and the ratio
// PostgreSQL / libsql of each.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../host/config.ts';
import { createMemoryProvider } from '../host/sandbox/memory/provider.ts';
import { startServer } from '../host/serve.ts';
import { openStore, type Store } from '../host/store/index.ts';
import { openPgStore } from '../host/store/pg/index.ts';
import { findPostgresBin } from '../scripts/setup/postgres.ts';
import { postgresUrl, startPostgresCluster } from '../tests/helpers/postgres-cluster.ts';
import { batchRun } from './lib/batch-run.ts';
import { noIsolates } from './lib/no-isolates.ts';
import { fillSearchLog, readOverHttp } from './lib/store-workloads.ts';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;
const SEARCH_EVENTS = Number(process.env.BENCH_SEARCH_EVENTS ?? 100_000);
const HTTP_CALLS = Number(process.env.BENCH_CALLS ?? 300);
const CREATES = Number(process.env.BENCH_CREATES ?? 500);

const bin = await findPostgresBin();
if (bin === undefined)
  throw new Error('no PostgreSQL binaries: run `npm run setup` (installs postgresql-15)');
for (const name of Object.keys(process.env)) if (name.startsWith('PG')) delete process.env[name];
const cluster = startPostgresCluster(bin, { durable: true });
const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-backends-'));
const secretsKey = Buffer.alloc(32, 7);
let databases = 0;

/** A fresh store of the backend: a new libsql file, or a new database in the cluster. */
const openBackend = async (backend: 'libsql' | 'postgres'): Promise<Store> => {
  databases++;
  if (backend === 'libsql') return openStore({ path: join(dir, `store-${databases}.db`), secretsKey });
  const name = `bench_${databases}`;
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8'`);
  await admin.end();
  return openPgStore({ url: postgresUrl(cluster.socketDir, name), secretsKey });
};

const BACKENDS = ['libsql', 'postgres'] as const;
type Figures = Record<(typeof BACKENDS)[number], number>;
const row = (label: string, unit: string, f: Figures) =>
  console.log(
    `${label.padEnd(44)} libsql ${f.libsql.toFixed(2).padStart(9)} ${unit}   postgres ${f.postgres.toFixed(2).padStart(9)} ${unit}   ratio ${(f.postgres / f.libsql).toFixed(2)}x`,
  );

const batches = async () => {
  const none = await batchRun(undefined);
  const figures = { answer: {} as Figures, cpu: {} as Figures, added: {} as Figures, durable: {} as Figures };
  for (const backend of BACKENDS) {
    const store = await openBackend(backend);
    try {
      const f = await batchRun(store.events);
      figures.answer[backend] = f.answerMs;
      figures.cpu[backend] = f.cpuMs;
      figures.added[backend] = f.cpuMs - none.cpuMs;
      figures.durable[backend] = f.durableMs;
    } finally {
      await store.close();
    }
  }
  console.log(
    `\n1. 1,000-call batch through the pipeline (no log: answer ${none.answerMs.toFixed(2)} ms, main-thread CPU ${none.cpuMs.toFixed(2)} ms)`,
  );
  row('   answer', 'ms', figures.answer);
  row('   main-thread CPU', 'ms', figures.cpu);
  row('   main-thread CPU the log adds', 'ms', figures.added);
  row('   until durable', 'ms', figures.durable);
};

const http = async () => {
  const figures = {} as Figures;
  for (const backend of BACKENDS) {
    const store = await openBackend(backend);
    const dataDir = mkdtempSync(join(dir, 'http-'));
    const config = loadConfig({ host: '127.0.0.1', port: 0, dataDir, tenantConcurrency: 1000 }, {});
    const server = await startServer(config, {
      sandboxes: createMemoryProvider(),
      isolates: noIsolates,
      store,
      log: () => {},
    });
    try {
      const call = await readOverHttp(server.url, store);
      const rounds: number[] = [];
      for (let round = 0; round < 5; round++) {
        const t = performance.now();
        for (let i = 0; i < HTTP_CALLS; i++) await call();
        rounds.push(((performance.now() - t) * 1000) / HTTP_CALLS);
      }
      figures[backend] = median(rounds);
    } finally {
      await server.close();
      await store.close();
    }
  }
  console.log(
    `\n2. one-call batch over HTTP (read 1 KB, memory sandbox; median of 5 rounds × ${HTTP_CALLS})`,
  );
  row('   per call', 'µs', figures);
};

const search = async () => {
  const fill: Figures = {} as Figures;
  const queries = {
    'a word written once, 90k events back': 'needle-1',
    'a word in every 13th event (newest 20)': 'kernel',
    'two words': 'alpha cache',
    'a word nobody wrote': 'zebra',
  };
  const latency: Record<string, Figures> = {};
  for (const backend of BACKENDS) {
    const store = await openBackend(backend);
    try {
      const t = performance.now();
      const { tenantId } = await fillSearchLog(store, SEARCH_EVENTS);
      fill[backend] = (performance.now() - t) / 1000;
      for (const [label, query] of Object.entries(queries)) {
        const times: number[] = [];
        for (let i = 0; i < 15; i++) {
          const s = performance.now();
          await store.search.search({ tenantId, query, limit: 20 });
          times.push(performance.now() - s);
        }
        latency[label] ??= {} as Figures;
        (latency[label] as Figures)[backend] = median(times);
      }
    } finally {
      await store.close();
    }
  }
  console.log(
    `\n3. session search over ${SEARCH_EVENTS} events of one tenant (+${SEARCH_EVENTS / 5} of another)`,
  );
  row('   writing them (500 per append, flushed)', 's', fill);
  for (const [label, f] of Object.entries(latency)) row(`   ${label}`, 'ms', f);
};

const creates = async () => {
  const figures = {} as Figures;
  for (const backend of BACKENDS) {
    const store = await openBackend(backend);
    try {
      const tenant = await store.tenants.createTenant('a');
      const make = () =>
        store.agents.create({ tenantId: tenant.id, preset: 'standard', mode: 'native', config: { n: 1 } });
      for (let i = 0; i < 50; i++) await make();
      const t = performance.now();
      for (let i = 0; i < CREATES; i++) await make();
      figures[backend] = ((performance.now() - t) * 1000) / CREATES;
    } finally {
      await store.close();
    }
  }
  console.log(`\n4. agent create (the store's row; ${CREATES} sequential)`);
  row('   per agent', 'µs', figures);
};

/** Where PostgreSQL's time goes: a bare round trip on the socket, and a one-row commit (its WAL flush). */
const floors = async () => {
  const store = await openBackend('postgres');
  await store.close();
  const client = new pg.Client({ connectionString: postgresUrl(cluster.socketDir, `bench_${databases}`) });
  await client.connect();
  try {
    await client.query('CREATE TABLE floor (id bigint PRIMARY KEY)');
    const time = async (n: number, fn: (i: number) => Promise<unknown>) => {
      for (let i = 0; i < 50; i++) await fn(-i - 1);
      const t = performance.now();
      for (let i = 0; i < n; i++) await fn(i);
      return ((performance.now() - t) * 1000) / n;
    };
    const select = await time(2000, () => client.query('SELECT 1'));
    const commit = await time(500, (i) => client.query('INSERT INTO floor VALUES ($1)', [i]));
    console.log(
      `\n0. PostgreSQL floors on this machine: a SELECT 1 round trip ${select.toFixed(0)} µs, a one-row INSERT committed (WAL flushed) ${commit.toFixed(0)} µs`,
    );
  } finally {
    await client.end();
  }
};

try {
  console.log(
    `store-backends bench: node ${process.version}, PostgreSQL from ${bin} (fsync and synchronous_commit on)`,
  );
  await floors();
  await batches();
  await http();
  await search();
  await creates();
} finally {
  cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
