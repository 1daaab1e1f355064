// ScheduleStore.due() before and after tenants take turns, `node --no-node-snapshot bench/schedule-turns.ts`:
// 10,000 schedules over 100 tenants (BENCH_TENANTS) on libsql (a file) and PostgreSQL (a private
// cluster this bench starts on a unix socket), in one run, the reads alternating. "before" is the
// soonest-first read (`ORDER BY next_at LIMIT`); "window" the plain fair query this change did not
// take (row_number() per tenant over every due row: it sorts the whole backlog at every read);
// "after" the store's due() (schedules-rows.ts dueInTurns: soonest limit + 1 when that is all that
// is due, else a skip along the tenants and a share of the limit from each). Two cases: a backlog
// (every schedule due) and the steady state (100 due, the rest ahead). Prints the median wall time
// of one read of 100, and the CPU of this process per read (libsql runs in it; for PostgreSQL that
// is the client's share only: the server's is the wall time less a round trip).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase } from '../host/store/db.ts';
import { migrate } from '../host/store/migrations.ts';
import { openPgDatabase } from '../host/store/pg/db.ts';
import { migratePg } from '../host/store/pg/migrate.ts';
import { createPgScheduleStore } from '../host/store/pg/schedules.ts';
import { createScheduleStore } from '../host/store/schedules.ts';
import { findPostgresBin } from '../scripts/setup/postgres.ts';
import { postgresUrl, startPostgresCluster } from '../tests/helpers/postgres-cluster.ts';

const TENANTS = Number(process.env.BENCH_TENANTS ?? 100);
const SCHEDULES = 10_000;
const BATCH = 100;
const READS = Number(process.env.BENCH_READS ?? 200);
const NOW = 1_000_000_000;

type Read = (at: number, limit: number) => Promise<unknown[]>;
const KINDS = ['before', 'window', 'after'] as const;
interface Backend {
  name: string;
  insert(rows: (string | number)[][]): Promise<void>;
  before: Read;
  window: Read;
  after: Read;
  clear(): Promise<void>;
  close(): Promise<void>;
}

/** Rows of SCHEDULES schedules over TENANTS tenants; `due` of them (spread evenly) due at NOW. */
const rowsOf = (due: number): (string | number)[][] =>
  Array.from({ length: SCHEDULES }, (_, i) => {
    const isDue = i % (SCHEDULES / due) === 0 || due === SCHEDULES;
    return [
      `sch_${i}`,
      `tn_${i % TENANTS}`,
      `agt_${i % (TENANTS * 10)}`,
      'p',
      'every',
      '{"every_seconds":60}',
      60_000,
      isDue ? NOW - (i % 997) : NOW + 1 + i,
      0,
    ];
  });

const BEFORE_SQL = (at: string, limit: string) =>
  `SELECT * FROM schedules WHERE next_at <= ${at} ORDER BY next_at LIMIT ${limit}`;
const WINDOW_SQL = (at: string, limit: string) =>
  `SELECT * FROM (
     SELECT *, row_number() OVER (PARTITION BY tenant_id ORDER BY next_at, id) AS turn
     FROM schedules WHERE next_at <= ${at}
   ) AS due ORDER BY turn, next_at, id LIMIT ${limit}`;
const INSERT =
  'INSERT INTO schedules (id, tenant_id, agent_id, prompt, kind, spec, every_ms, next_at, created_at) VALUES';

const libsqlBackend = (dir: string): Backend => {
  const db = openDatabase({ path: join(dir, 'store.db') });
  migrate(db);
  const insert = db.prepare(`${INSERT} (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const before = db.prepare(BEFORE_SQL('?', '?'));
  const window = db.prepare(WINDOW_SQL('?', '?'));
  const store = createScheduleStore(db);
  return {
    name: 'libsql',
    insert: async (rows) => {
      db.exec('BEGIN');
      for (const row of rows) insert.run(...row);
      db.exec('COMMIT');
      db.exec('ANALYZE');
    },
    before: async (at, limit) => before.all(at, limit),
    window: async (at, limit) => window.all(at, limit),
    after: (at, limit) => store.due(at, limit),
    clear: async () => {
      db.exec('DELETE FROM schedules');
    },
    close: async () => {
      db.close();
    },
  };
};

const pgBackend = async (url: string): Promise<Backend> => {
  const db = openPgDatabase({ url, poolSize: 1 });
  await migratePg(db);
  const store = createPgScheduleStore(db);
  return {
    name: 'postgres',
    insert: async (rows) => {
      for (let i = 0; i < rows.length; i += 500) {
        const chunk = rows.slice(i, i + 500);
        const values = chunk.map((_, r) => `(${Array.from({ length: 9 }, (_, c) => `$${r * 9 + c + 1}`)})`);
        await db.query(`${INSERT} ${values.join(', ')}`, chunk.flat());
      }
      await db.query('ANALYZE schedules');
    },
    before: (at, limit) => db.many(BEFORE_SQL('$1', '$2'), [at, limit]),
    window: (at, limit) => db.many(WINDOW_SQL('$1', '$2'), [at, limit]),
    after: (at, limit) => store.due(at, limit),
    clear: async () => void (await db.query('DELETE FROM schedules')),
    close: () => db.close(),
  };
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;

/** Median wall ms and mean process CPU ms of one read of each kind, the kinds alternating. */
const measure = async (backend: Backend) => {
  const wall = { before: [] as number[], window: [] as number[], after: [] as number[] };
  const cpu = { before: 0, window: 0, after: 0 };
  for (let i = 0; i < 10; i++) for (const kind of KINDS) await backend[kind](NOW, BATCH);
  for (let i = 0; i < READS; i++)
    for (let k = 0; k < KINDS.length; k++) {
      const kind = KINDS[(i + k) % KINDS.length] as (typeof KINDS)[number];
      const c = process.cpuUsage();
      const t = performance.now();
      const got = await backend[kind](NOW, BATCH);
      wall[kind].push(performance.now() - t);
      const used = process.cpuUsage(c);
      cpu[kind] += (used.user + used.system) / 1000;
      if (got.length === 0) throw new Error(`${kind} read nothing`);
    }
  return KINDS.map((kind) => ({ kind, wall: median(wall[kind]), cpu: cpu[kind] / READS }));
};

const bin = await findPostgresBin();
if (bin === undefined)
  throw new Error('no PostgreSQL binaries: run `npm run setup` (installs postgresql-15)');
for (const name of Object.keys(process.env)) if (name.startsWith('PG')) delete process.env[name];
const cluster = startPostgresCluster(bin, { durable: true });
const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-turns-'));
try {
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE bench_turns TEMPLATE template0 ENCODING 'UTF8'`);
  await admin.end();
  const backends = [libsqlBackend(dir), await pgBackend(postgresUrl(cluster.socketDir, 'bench_turns'))];
  console.log(
    `schedule-turns bench: node ${process.version}, ${SCHEDULES} schedules over ${TENANTS} tenants, reads of ${BATCH}, ${READS} of each`,
  );
  for (const [label, due] of [
    ['backlog (all 10,000 due)', SCHEDULES],
    ['steady (100 due)', BATCH],
  ] as const) {
    console.log(`\n${label}`);
    for (const backend of backends) {
      await backend.clear();
      await backend.insert(rowsOf(due));
      for (const f of await measure(backend))
        console.log(
          `  ${backend.name.padEnd(9)} ${f.kind.padEnd(7)} wall ${f.wall.toFixed(3).padStart(8)} ms  process CPU ${f.cpu.toFixed(3).padStart(8)} ms`,
        );
    }
  }
  for (const backend of backends) await backend.close();
} finally {
  cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
