// What answering one tenant costs as the number of tenants grows, `node --no-node-snapshot
// bench/tenant-reads.ts [tenants]` (default 2,000), on both store backends in one run (libsql, and
// PostgreSQL in a private cluster this bench starts): a store of 20 tenants and one of `tenants`,
// every tenant with a log (one logged call) and 10 of them with quotas, each read by a store
// opened afresh on the same database (another replica's view: nothing counted in its process).
// 1. GET /v1/limits's log usage: before, every tenant's usage listed and the caller's picked out
//    (EventPayloads.usage); now the caller's own (EventPayloads.usageOf).
// 2. The plugin quota cache's refresh (every 3 s in every replica): before, every tenant listed
//    (TenantStore.listTenants); now the active tenants with quotas (TenantStore.listQuotas).
// Prints, per read, the rows the store answered and the median time at both sizes, and the growth
// (large / small): flat for a read whose cost does not grow with the number of tenants.
// Needs PostgreSQL's binaries (npm run setup installs them).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase } from '../host/store/db.ts';
import { openStore, type Store } from '../host/store/index.ts';
import { openPgStore } from '../host/store/pg/index.ts';
import { QUOTAS_SQL } from '../host/store/tenant-keys.ts';
import { findPostgresBin } from '../scripts/setup/postgres.ts';
import { postgresUrl, startPostgresCluster } from '../tests/helpers/postgres-cluster.ts';
import { median, timed } from './lib/timing.ts';

const LARGE = Number(process.argv[2] ?? 2000);
const SMALL = 20;
const WITH_QUOTAS = 10;
const ROUNDS = 200;

const bin = await findPostgresBin();
if (bin === undefined)
  throw new Error('no PostgreSQL binaries: run `npm run setup` (installs postgresql-15)');
for (const name of Object.keys(process.env)) if (name.startsWith('PG')) delete process.env[name];
const cluster = startPostgresCluster(bin, { durable: false });
const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-tenant-reads-'));
const secretsKey = Buffer.alloc(32, 7);
let databases = 0;

type Backend = 'libsql' | 'postgres';

interface Database {
  open(): Promise<Store>;
  /** How the database runs listQuotas's statement (its plan's first line). */
  plan(): Promise<string>;
}

/** A fresh database of the backend, and how to open a store on it (again). */
const newDatabase = async (backend: Backend): Promise<Database> => {
  databases++;
  if (backend === 'libsql') {
    const path = join(dir, `store-${databases}.db`);
    return {
      open: async () => openStore({ path, secretsKey }),
      plan: async () => {
        const db = openDatabase({ path });
        const rows = db.prepare(`EXPLAIN QUERY PLAN ${QUOTAS_SQL}`).all() as { detail: string }[];
        db.close();
        return rows.map((r) => r.detail).join('; ');
      },
    };
  }
  const name = `bench_${databases}`;
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8'`);
  await admin.end();
  const url = postgresUrl(cluster.socketDir, name);
  return {
    open: () => openPgStore({ url, secretsKey }),
    plan: async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query('ANALYZE tenants'); // as autovacuum would have by then
      const { rows } = await client.query(`EXPLAIN ${QUOTAS_SQL}`);
      await client.end();
      return String(Object.values(rows[0] ?? {})[0]);
    },
  };
};

/** `count` tenants, each with one logged call, the first WITH_QUOTAS with quotas; their ids. */
const fill = async (store: Store, count: number): Promise<string[]> => {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const tenant = await store.tenants.createTenant(`tenant-${i}`);
    if (i < WITH_QUOTAS) await store.tenants.setQuotas(tenant.id, { plugins: 2, logBytes: 1 << 30 });
    const agent = await store.agents.create({
      tenantId: tenant.id,
      preset: 'default',
      mode: 'native',
      config: {},
    });
    await store.events.append([
      {
        sessionId: agent.id,
        type: 'tool.call',
        surface: 'current',
        callId: 'c1',
        data: { name: 'bash', arguments: { command: 'ls' } },
      },
    ]);
    ids.push(tenant.id);
  }
  await store.events.flush();
  return ids;
};

interface Read {
  rows: number;
  ms: number;
}

/** The median time of `read` over ROUNDS rounds, and the rows its answer had. */
const measure = async (read: () => Promise<number>): Promise<Read> => {
  let rows = 0;
  for (let i = 0; i < 10; i++) rows = await read(); // warm: statements prepared, pages cached
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) times.push(await timed(async () => (rows = await read())));
  return { rows, ms: median(times) };
};

const READS = {
  'limits log usage, before (usage)': async (s: Store, id: string) => {
    const all = await s.events.usage();
    if (all.find((u) => u.tenantId === id) === undefined) throw new Error('no usage');
    return all.length;
  },
  'limits log usage, now (usageOf)': async (s: Store, id: string) => {
    if ((await s.events.usageOf(id)).bytes === 0) throw new Error('no usage');
    return 1;
  },
  'quota refresh, before (listTenants)': async (s: Store) => {
    const all = await s.tenants.listTenants();
    if (all.filter((t) => t.quotas !== undefined && t.state === 'active').length !== WITH_QUOTAS)
      throw new Error('quotas missing');
    return all.length;
  },
  'quota refresh, now (listQuotas)': async (s: Store) => {
    const rows = await s.tenants.listQuotas();
    if (rows.length !== WITH_QUOTAS) throw new Error('quotas missing');
    return rows.length;
  },
} satisfies Record<string, (s: Store, id: string) => Promise<number>>;

/** listQuotas's plan on each database made. */
const plans: string[] = [];

/** Every read's figures over a store of `count` tenants, read by a store opened afresh. */
const figures = async (backend: Backend, count: number): Promise<Record<string, Read>> => {
  const database = await newDatabase(backend);
  const writer = await database.open();
  const ids = await fill(writer, count);
  await writer.close();
  plans.push(`${backend}, ${count} tenants: ${await database.plan()}`);
  const reader = await database.open();
  const out: Record<string, Read> = {};
  // The caller is the last tenant made (no quotas): the worst case for a scan in creation order.
  const caller = ids[ids.length - 1] as string;
  for (const [name, read] of Object.entries(READS)) out[name] = await measure(() => read(reader, caller));
  await reader.close();
  return out;
};

try {
  console.log(
    `tenant reads: ${SMALL} vs ${LARGE} tenants (each with a log, ${WITH_QUOTAS} with quotas), median of ${ROUNDS}`,
  );
  for (const backend of ['libsql', 'postgres'] as const) {
    const small = await figures(backend, SMALL);
    const large = await figures(backend, LARGE);
    console.log(`\n${backend}`);
    for (const name of Object.keys(READS)) {
      const s = small[name] as Read;
      const l = large[name] as Read;
      console.log(
        `  ${name.padEnd(38)} rows ${String(s.rows).padStart(5)} -> ${String(l.rows).padStart(5)}   ` +
          `${s.ms.toFixed(3).padStart(8)} ms -> ${l.ms.toFixed(3).padStart(8)} ms   growth ${(l.ms / s.ms).toFixed(1)}x`,
      );
    }
  }
  console.log('\nlistQuotas plans:');
  for (const plan of plans) console.log(`  ${plan}`);
} finally {
  cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
