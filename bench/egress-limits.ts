// What holding a tenant's egress budget across replicas costs a request (host/egress/budget-shared.ts
// over host/store/pg/limits.ts): two replicas (two stores, two pools) on one private PostgreSQL
// database, each running REQUESTS egress "requests" of one tenant one after the other: open a lease,
// take a 600-byte request head, charge a 20 KB response, close. Against the in-process counter
// (host/egress/budget.ts, what libsql uses) for the same work. Printed: the time per request of
// each, how many chunk leases were made and what one costs (a round trip and one upsert), so the
// amortised cost per request, for a large budget (1 GB/h) and a small one (16 MiB/h); a chunk is
// a sixteenth of the budget.
// Run: node --no-node-snapshot bench/egress-limits.ts (needs PostgreSQL's binaries: npm run setup).
import { loadavg } from 'node:os';
import pg from 'pg';
import { type Budgets, createBudgets } from '../host/egress/budget.ts';
import { createSharedBudgets } from '../host/egress/budget-shared.ts';
import type { LimitStore } from '../host/store/limits-port.ts';
import { openPgStore } from '../host/store/pg/index.ts';
import type { Store } from '../host/store/store.ts';
import { findPostgresBin } from '../scripts/setup/postgres.ts';
import { postgresUrl, startPostgresCluster } from '../tests/helpers/postgres-cluster.ts';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000);
const KEY = Buffer.alloc(32, 7);

const bin = await findPostgresBin();
if (bin === undefined)
  throw new Error('no PostgreSQL binaries: run `npm run setup` (installs postgresql-15)');
for (const name of Object.keys(process.env)) if (name.startsWith('PG')) delete process.env[name];
const cluster = startPostgresCluster(bin);
const stores: Store[] = [];

/** A LimitStore that counts and times its leases. */
const counted = (limits: LimitStore) => {
  const stats = { leases: 0, ms: 0 };
  const store: LimitStore = {
    liveReplicas: (withinMs) => limits.liveReplicas(withinMs),
    async leaseEgressBytes(tenantId, window, bytes, limit) {
      const start = performance.now();
      try {
        return await limits.leaseEgressBytes(tenantId, window, bytes, limit);
      } finally {
        stats.leases++;
        stats.ms += performance.now() - start;
      }
    },
  };
  return { store, stats };
};

/** `requests` requests of `tenant` through `budgets`; ms per request. */
const run = async (
  budgets: Budgets,
  tenant: string,
  bytesPerHour: number,
  requests: number,
): Promise<number> => {
  const budget = { connections: 64, bytesPerHour };
  const start = performance.now();
  for (let i = 0; i < requests; i++) {
    const lease = await budgets.open(tenant, budget);
    if (!(await lease.take(600))) throw new Error('refused: raise the budget');
    if (!lease.charge(20_000)) throw new Error('cut: raise the budget');
    lease.close();
  }
  return (performance.now() - start) / requests;
};

try {
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  await admin.query('CREATE DATABASE bench_egress_limits');
  await admin.end();
  const url = postgresUrl(cluster.socketDir, 'bench_egress_limits');
  for (const id of ['a', 'b']) {
    const store = await openPgStore({ url, secretsKey: KEY });
    stores.push(store);
    await store.leases?.register({ id, url: `http://127.0.0.1:1/${id}` });
  }
  console.log(
    `load before: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}; ${REQUESTS} requests per replica`,
  );
  const local = await run(createBudgets(), 'local', 10 ** 12, REQUESTS);
  console.log(`in-process counter (libsql): ${(local * 1000).toFixed(2)} µs per request`);
  for (const { name, limit, requests } of [
    { name: '1 GB/h (62.5 MB chunks)', limit: 10 ** 9, requests: REQUESTS },
    // 16 MiB hold about 800 such requests: 350 per replica fit.
    { name: '16 MiB/h (1 MiB chunks)', limit: 16 * 1_048_576, requests: 350 },
  ]) {
    const replicas = stores.map((s) => counted(s.limits!));
    const budgets = replicas.map((r) => createSharedBudgets({ usage: r.store, liveWithinMs: 60_000 }));
    const perRequest = await Promise.all(budgets.map((b) => run(b, name, limit, requests)));
    const leases = replicas.reduce((n, r) => n + r.stats.leases, 0);
    const leaseMs = replicas.reduce((n, r) => n + r.stats.ms, 0) / Math.max(1, leases);
    const total = 2 * requests;
    console.log(
      `shared, ${name}: ${((perRequest.reduce((a, b) => a + b, 0) / 2) * 1000).toFixed(2)} µs per request (two replicas at once, ${requests} each); ` +
        `${leases} chunk leases for ${total} requests (one per ${(total / Math.max(1, leases)).toFixed(0)}), ` +
        `${leaseMs.toFixed(2)} ms each: ${((leases * leaseMs * 1000) / total).toFixed(2)} µs per request amortised`,
    );
  }
  console.log(
    `load after: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
} finally {
  for (const s of stores) await s.close().catch(() => undefined);
  cluster.stop();
}
