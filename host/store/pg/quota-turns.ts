// The tenant's quota turns across replicas on PostgreSQL (TenantStore.quotaTurn): a quota's check
// and what it admits (an agent's create, a snapshot) run under a session advisory lock keyed by
// the quota's scope and the tenant, so replicas on one database admit a tenant's creates (or its
// snapshots) one at a time, each counting what the others made. The lock is taken with
// pg_try_advisory_lock on a pooled connection kept for the work and let go after it (a connection
// that dies lets go of it too); a lock another replica holds is tried again shortly, the connection
// given back meanwhile, so a waiting tenant holds none. The wait is bounded (waitMs): a replica
// that holds the lock and hangs (a stalled create, a paused process whose session lives on) makes
// the others answer STORE_BUSY (503, Retry-After) instead of hanging their requests.
// Invariants: at most poolSize - 1 locks are held here at once (the work's own queries always find
// a connection: no pool deadlock); each process calls it inside its own per-tenant turn
// (host/api/quotas.ts), so it asks at most one lock per tenant and scope at a time; a lock is
// released on the connection that took it; a turn that gave up did none of its work.
import type pg from 'pg';
import { SandboxError } from '../../errors.ts';
import type { QuotaScope } from '../tenants-port.ts';
import { type PgDatabase, pgStoreError } from './db.ts';

/** Between tries of a lock another replica holds (ms, plus up to as much again at random). */
const RETRY_MS = 20;

/** How long a turn waits for a lock another replica holds (ms), as libsql's busy timeout (../db.ts). */
export const QUOTA_WAIT_MS = 5000;

export interface PgQuotaTurnOptions {
  /** How long to wait for a lock another replica holds before STORE_BUSY (ms). Default QUOTA_WAIT_MS. */
  waitMs?: number;
}

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

/** The answer when the lock stays held past the bound: the client retries (no work was done). */
const busy = (scope: QuotaScope, tenantId: string, waitMs: number): SandboxError =>
  new SandboxError(
    'STORE_BUSY',
    `Another replica has held this tenant's ${scope} quota check for over ${waitMs} ms; nothing was done. Retry after Retry-After.`,
    { data: { scope, tenantId, waitMs, retryAfterS: 1 } },
  );

export function createPgQuotaTurn(
  db: PgDatabase,
  options: PgQuotaTurnOptions = {},
): <T>(scope: QuotaScope, tenantId: string, work: () => Promise<T>) => Promise<T> {
  const slots = holders(Math.max(1, (db.pool.options.max ?? 10) - 1));
  const waitMs = options.waitMs ?? QUOTA_WAIT_MS;
  return async (scope, tenantId, work) => {
    await slots.take();
    try {
      const deadline = Date.now() + waitMs;
      let client = await tryLock(db, scope, tenantId);
      while (client === undefined) {
        const left = deadline - Date.now();
        if (left <= 0) throw busy(scope, tenantId, waitMs);
        await sleep(Math.min(left, RETRY_MS * (1 + Math.random())));
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
