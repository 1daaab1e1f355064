// What is left of a deleted tenant on PostgreSQL, removed in bounded slices: the TenantPurgeStore
// of ../tenant-purge.ts over the same kinds in the same order, each row named by its ctid (every
// table has one, so one statement shape serves all). Invariants as there: agents go only deleted
// and without a sandbox; only the tenant's rows are touched; a slice is one transaction.
import { PURGE_KINDS, placeholders, type TenantPurgeStore } from '../tenant-purge.ts';
import { type PgDatabase, pgGuarded } from './db.ts';

/** `?` → `$1 … $n` (every one is bound, in order). */
const numbered = (sql: string): string => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

export const createPgTenantPurgeStore = (db: PgDatabase): TenantPurgeStore => {
  const steps = PURGE_KINDS.map(({ kind, where }) => ({
    kind,
    params: placeholders(where),
    count: numbered(
      `SELECT count(*)::bigint AS n FROM ${kind} WHERE ${kind === 'agents' ? 'tenant_id = ?' : where}`,
    ),
    remove: numbered(`DELETE FROM ${kind} WHERE ctid IN (SELECT ctid FROM ${kind} WHERE ${where} LIMIT ?)`),
  }));
  return {
    remaining: (tenantId) =>
      pgGuarded('read tenant remains', async () => {
        const left: Record<string, number> = {};
        for (const step of steps) {
          const args = step.kind === 'agents' ? [tenantId] : Array(step.params).fill(tenantId);
          const n = Number((await db.one<{ n: number }>(step.count, args))?.n ?? 0);
          if (n > 0) left[step.kind] = n;
        }
        return left;
      }),
    purgeSlice: (tenantId, limit) =>
      pgGuarded('remove tenant rows', () =>
        db.tx(async (tx) => {
          for (const step of steps) {
            const { rowCount } = await tx.query(step.remove, [...Array(step.params).fill(tenantId), limit]);
            if (rowCount > 0) return rowCount;
          }
          return 0;
        }),
      ),
  };
};
