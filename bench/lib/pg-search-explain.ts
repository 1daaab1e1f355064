// EXPLAIN (ANALYZE, BUFFERS) of the session searches bench/store-backends.ts part 3 times on
// PostgreSQL: the same fill (100k events of one tenant in 10 sessions, 20k of another), the same
// queries, each search's SQL captured from the pool and explained after a warm-up run. A tool for
// reading plans, not a figure of the bench (bench/lib: `npm run bench` does not run it).
// Run: node --no-node-snapshot bench/lib/pg-search-explain.ts; QUERIES=a,b picks the searches,
// SESSIONS=1 limits them to one session, SQL=1 prints each statement, SETUP=<file> runs SQL after
// the fill (an ANALYZE, an index to try), ALT=<file> times and explains candidate statements
// (separated by lines of `---`) with the captured statement's parameters.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { openPgStore } from '../../host/store/pg/index.ts';
import { findPostgresBin } from '../../scripts/setup/postgres.ts';
import { postgresUrl, startPostgresCluster } from '../../tests/helpers/postgres-cluster.ts';
import { fillSearchLog } from './store-workloads.ts';

const EVENTS = Number(process.env.BENCH_SEARCH_EVENTS ?? 100_000);
const bin = await findPostgresBin();
if (bin === undefined) throw new Error('no PostgreSQL binaries: run `npm run setup`');
for (const name of Object.keys(process.env)) if (name.startsWith('PG')) delete process.env[name];
const cluster = startPostgresCluster(bin, { durable: true });

// Every statement a search sends, with its parameters.
let captured: { sql: string; params: unknown[] } | undefined;
const query = pg.Pool.prototype.query as (...args: unknown[]) => unknown;
pg.Pool.prototype.query = function (this: pg.Pool, ...args: unknown[]) {
  if (typeof args[0] === 'string' && /event_index m/.test(args[0]))
    captured = { sql: args[0], params: (args[1] as unknown[]) ?? [] };
  return query.apply(this, args);
} as typeof pg.Pool.prototype.query;

try {
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE explain_search TEMPLATE template0 ENCODING 'UTF8'`);
  await admin.end();
  const url = postgresUrl(cluster.socketDir, 'explain_search');
  const store = await openPgStore({ url, secretsKey: Buffer.alloc(32, 7) });
  const fill = await fillSearchLog(store, EVENTS);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  if (process.env.SETUP !== undefined) await client.query(readFileSync(process.env.SETUP, 'utf8'));
  const size = await client.query(
    `SELECT pg_size_pretty(pg_total_relation_size('event_index')) AS t, pg_size_pretty(pg_relation_size('event_index')) AS h`,
  );
  console.log('event_index size', size.rows[0]);
  const queries = (process.env.QUERIES ?? 'kernel,needle-1,alpha cache,zebra').split(',');
  const sessionFilter = process.env.SESSIONS === '1' ? [fill.sessionIds[3] as string] : undefined;
  for (const q of queries) {
    captured = undefined;
    for (let i = 0; i < 5; i++)
      await store.search.search({ tenantId: fill.tenantId, query: q, limit: 20, sessionIds: sessionFilter });
    const times: number[] = [];
    for (let i = 0; i < 15; i++) {
      const s = performance.now();
      await store.search.search({ tenantId: fill.tenantId, query: q, limit: 20, sessionIds: sessionFilter });
      times.push(performance.now() - s);
    }
    times.sort((a, b) => a - b);
    if (captured === undefined) throw new Error('no search statement captured');
    const { sql, params } = captured as { sql: string; params: unknown[] };
    const plan = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params);
    console.log(`\n=== ${JSON.stringify(q)}: median ${(times[7] as number).toFixed(2)} ms`);
    if (process.env.SQL === '1') console.log(sql, params);
    for (const r of plan.rows as { 'QUERY PLAN': string }[]) console.log(r['QUERY PLAN']);
    // Candidate statements (ALT: a file of statements separated by lines of `---`), run with the
    // same parameters, timed and explained the same way.
    if (process.env.ALT !== undefined)
      for (const alt of readFileSync(process.env.ALT, 'utf8').split(/^---$/m)) {
        const alts: number[] = [];
        for (let i = 0; i < 20; i++) {
          const s = performance.now();
          await client.query(alt, params);
          alts.push(performance.now() - s);
        }
        alts.sort((a, b) => a - b);
        const altPlan = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${alt}`, params);
        console.log(`--- candidate: median ${(alts[10] as number).toFixed(2)} ms`);
        for (const r of altPlan.rows as { 'QUERY PLAN': string }[]) console.log(r['QUERY PLAN']);
      }
  }
  await client.end();
  await store.close();
} finally {
  cluster.stop();
}
