// Schedules on PostgreSQL: the ScheduleStore of ../schedules.ts over the same rows (`schedules`,
// pg/baseline.ts), with its invariants: every read and delete takes the tenant and the agent; the
// count limit holds when create() resolves; firing a schedule (removing a one-shot one, advancing a
// recurring one) and the request the fire makes commit together or not at all, only for the due
// time the firer read, and a schedule deleted meanwhile does not fire.
// Where Postgres differs, and why:
// - fire() is one conditional DELETE/UPDATE `WHERE id = $ AND next_at = <due time read>` and the
//   request's INSERT (pg/requests.ts's insertPgRequest) in one transaction. Two replicas firing the
//   same due time: the second statement waits for the first's row lock and, under READ COMMITTED,
//   re-checks its WHERE against the committed row (moved on, or gone) and touches nothing, so it
//   writes no request. libsql gets the same from its single writer.
// - create()'s check (count the agent's schedules, then insert) would let two replicas both take
//   the last place; an agent with no schedule has no row to lock, so create() first takes a
//   transaction-scoped advisory lock on the owner (a hash of 'schedules:', the tenant and the
//   agent). Creates for one owner queue; others do not (a hash collision only makes two queue).
// - due() in turns across tenants (../schedules-rows.ts dueInTurns) reads each tenant's share
//   through a LATERAL subquery; SQLite, which has none, through an IN list of rowids.
// Reads order by (created_at, rowid), rowid being baseline.ts's identity column standing in for
// SQLite's implicit one: schedules made in one millisecond list in insertion order on both backends.
import type { ScheduleStore } from '../schedules-port.ts';
import {
  dueInTurns,
  inTurns,
  newScheduleRecord,
  type ScheduleRow,
  scheduleInsertParams,
  toScheduleRecord,
} from '../schedules-rows.ts';
import { type PgDatabase, pgGuarded } from './db.ts';
import { insertPgRequest } from './requests.ts';

const COLUMNS =
  'id, tenant_id, agent_id, prompt, kind, spec, every_ms, next_at, fired, last_fired_at, created_at';

export const createPgScheduleStore = (db: PgDatabase, now: () => number = Date.now): ScheduleStore => ({
  create: (input, maxPerAgent, maxPerTenant = Number.POSITIVE_INFINITY) =>
    pgGuarded('create a schedule', () =>
      db.tx(async (tx) => {
        // The owner's creates one at a time (see the header): the count stays true until COMMIT.
        await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('schedules:' || $1 || ':' || $2, 0))", [
          input.tenantId,
          input.agentId,
        ]);
        const counted = await tx.one<{ n: number }>(
          'SELECT count(*) AS n FROM schedules WHERE tenant_id = $1 AND agent_id = $2',
          [input.tenantId, input.agentId],
        );
        const n = counted?.n ?? 0;
        // The tenant's count is not under that lock: concurrent creates of its several agents may
        // pass it by as many as run at once (a bound on its fire rate, not an exact quota).
        const tenant = Number.isFinite(maxPerTenant)
          ? {
              n: Number(
                (
                  await tx.one<{ n: number }>('SELECT count(*) AS n FROM schedules WHERE tenant_id = $1', [
                    input.tenantId,
                  ])
                )?.n ?? 0,
              ),
              max: maxPerTenant,
            }
          : undefined;
        const record = newScheduleRecord(input, n, maxPerAgent, now(), tenant);
        await tx.query(
          `INSERT INTO schedules (id, tenant_id, agent_id, prompt, kind, spec, every_ms, next_at, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          scheduleInsertParams(record),
        );
        return record;
      }),
    ),

  list: (tenantId, agentId) =>
    pgGuarded('list schedules', async () =>
      (
        await db.many<ScheduleRow>(
          `SELECT ${COLUMNS} FROM schedules WHERE tenant_id = $1 AND agent_id = $2 ORDER BY created_at, rowid`,
          [tenantId, agentId],
        )
      ).map(toScheduleRecord),
    ),

  delete: (tenantId, agentId, id) =>
    pgGuarded('delete a schedule', async () => {
      const { rowCount } = await db.query(
        'DELETE FROM schedules WHERE id = $1 AND tenant_id = $2 AND agent_id = $3',
        [id, tenantId, agentId],
      );
      return rowCount > 0;
    }),

  deleteAgent: (agentId) =>
    pgGuarded('delete schedules', async () => {
      const { rowCount } = await db.query('DELETE FROM schedules WHERE agent_id = $1', [agentId]);
      return rowCount;
    }),

  due: (at, limit) =>
    pgGuarded('read due schedules', async () => {
      const soonest = await db.many<ScheduleRow>(
        `SELECT ${COLUMNS} FROM schedules WHERE next_at <= $1 ORDER BY next_at, rowid LIMIT $2`,
        [at, limit + 1],
      );
      // More due than one read takes: in turns across tenants (../schedules-rows.ts).
      const rows =
        soonest.length <= limit
          ? inTurns(soonest)
          : await db.many<ScheduleRow>(dueInTurns('postgres', COLUMNS), [at, limit]);
      return rows.map(toScheduleRecord);
    }),

  nextDue: () =>
    pgGuarded('read due schedules', async () => {
      const row = await db.one<{ at: number | null }>('SELECT min(next_at) AS at FROM schedules');
      return row?.at ?? undefined;
    }),

  fire: ({ id, dueAt }, firedAt, nextAt, request) =>
    pgGuarded('fire a schedule', () =>
      db.tx(async (tx) => {
        // Only the due time this firer read: a replica that fired it first wins (see the header).
        const { rowCount } =
          nextAt === undefined
            ? await tx.query('DELETE FROM schedules WHERE id = $1 AND next_at = $2', [id, dueAt])
            : await tx.query(
                'UPDATE schedules SET next_at = $1, fired = fired + 1, last_fired_at = $2 WHERE id = $3 AND next_at = $4',
                [nextAt, firedAt, id, dueAt],
              );
        if (rowCount === 0) return false;
        if (request !== undefined) await insertPgRequest(tx, request);
        return true;
      }),
    ),
});
