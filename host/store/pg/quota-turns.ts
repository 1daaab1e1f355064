// The tenant's quota turns across replicas on PostgreSQL (TenantStore.quotaTurn): a quota's check
// and what it admits (an agent's create, a snapshot) run under a session advisory lock keyed by
// the quota's scope and the tenant, so replicas on one database admit a tenant's creates (or its
// snapshots) one at a time, each counting what the others made. The lock is taken with
// pg_try_advisory_lock on a pooled connection kept for the work and let go after it (a connection
// that dies lets go of it too); a lock another replica holds is tried again shortly, the connection
// given back meanwhile, so a waiting tenant holds none. Invariants: at most poolSize - 1 locks are
// held here at once (the work's own queries always find a connection: no pool deadlock); each
// process calls it inside its own per-tenant turn (host/api/quotas.ts), so it asks at most one
// lock per tenant and scope at a time; a lock is released on the connection that took it.
import type pg from 'pg';
import type { QuotaScope } from '../tenants-port.ts';
import { type PgDatabase, pgStoreError } from './db.ts';

/** Between tries of a lock another replica holds (ms, plus up to as much again at random). */
const RETRY_MS = 20;

/** A counter of the locks held here, with the callers waiting for one. */
function holders(max: number): { take(): Promise<void>; give(): void } {
  let held = 0;
  const waiting: (() => void)[] = [];
  return {
    async take() {
      if (held < max) {
        held++;
        return;
      }
      await new Promise<void>((resolve) => waiting.push(resolve));
    },
    give() {
      const next = waiting.shift();
      if (next === undefined) held--;
      else next();
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Takes the lock on a client of the pool; undefined while another session holds it (the client given back). */
async function tryLock(
  db: PgDatabase,
  scope: QuotaScope,
  tenantId: string,
): Promise<pg.PoolClient | undefined> {
  const client = await db.pool.connect().catch((cause: unknown) => {
    throw pgStoreError('connect', cause);
  });
  try {
    const row = await client.query<{ got: boolean }>(
      'SELECT pg_try_advisory_lock(hashtext($1), hashtext($2)) AS got',
      [`dsh-quota:${scope}`, tenantId],
    );
    if (row.rows[0]?.got === true) return client;
    client.release();
    return undefined;
  } catch (cause) {
    client.release(true);
    throw pgStoreError('take a quota lock', cause);
  }
}

export function createPgQuotaTurn(
  db: PgDatabase,
): <T>(scope: QuotaScope, tenantId: string, work: () => Promise<T>) => Promise<T> {
  const slots = holders(Math.max(1, (db.pool.options.max ?? 10) - 1));
  return async (scope, tenantId, work) => {
    await slots.take();
    try {
      let client = await tryLock(db, scope, tenantId);
      while (client === undefined) {
        await sleep(RETRY_MS * (1 + Math.random()));
        client = await tryLock(db, scope, tenantId);
      }
      try {
        return await work();
      } finally {
        const held = client;
        await held
          .query('SELECT pg_advisory_unlock(hashtext($1), hashtext($2))', [`dsh-quota:${scope}`, tenantId])
          .then(
            () => held.release(),
            // Its session ends, and with it the lock.
            () => held.release(true),
          );
      }
    } finally {
      slots.give();
    }
  };
}
