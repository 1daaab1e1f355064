// The limits' central side on PostgreSQL (../limits-port.ts): `egress_usage`, one row per
// tenant and hour window (migration 19), and the live replicas read from `replicas` (migration 18).
// Invariants: a lease is one upsert on the tenant's row, so two replicas leasing at once settle it
// on the row lock and the window's `used` never passes the limit asked; every SET expression reads
// the row as it was, which is how `granted` is the very amount added. Rows of windows over a day
// old go when a tenant's next window opens (one DELETE a tenant an hour).
import type { LimitStore } from '../limits-port.ts';
import { type PgDatabase, pgGuarded } from './db.ts';

const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

export const createPgLimitStore = (db: PgDatabase): LimitStore => ({
  leaseEgressBytes: (tenantId, window, bytes, limit) =>
    pgGuarded('lease egress bytes', async () => {
      const row = await db.one<{ granted: string | number; fresh: boolean }>(
        `INSERT INTO egress_usage AS u (tenant_id, window_start, used, granted)
         VALUES ($1, $2, LEAST($3::bigint, $4::bigint), LEAST($3::bigint, $4::bigint))
         ON CONFLICT (tenant_id, window_start) DO UPDATE SET
           used = u.used + LEAST($3::bigint, $4::bigint - u.used),
           granted = LEAST($3::bigint, $4::bigint - u.used)
         WHERE u.used < $4::bigint
         RETURNING u.granted, (xmax = 0) AS fresh`,
        [tenantId, window, bytes, limit],
      );
      if (row?.fresh === true)
        await db.query('DELETE FROM egress_usage WHERE tenant_id = $1 AND window_start < $2', [
          tenantId,
          window - 24,
        ]);
      return Math.max(0, Number(row?.granted ?? 0));
    }),

  liveReplicas: (withinMs) =>
    pgGuarded('count the live replicas', async () => {
      const row = await db.one<{ n: string | number }>(
        `SELECT count(*) AS n FROM replicas WHERE heartbeat_at > ${NOW_MS} - $1`,
        [withinMs],
      );
      return Math.max(1, Number(row?.n ?? 0));
    }),
});
