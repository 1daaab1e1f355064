// Schedules (seed 000 `schedule_*`): an agent's durable reminders, one row each in `schedules`
// (migration 7). The store keeps them and decides nothing about time: the scheduler
// (host/schedules/scheduler.ts) computes when each is due and fires it. Invariants: every read and
// delete takes the tenant and the agent, so nobody reaches another's schedules; the count limit
// is checked in the same transaction as the insert; firing a schedule (removing a one-shot one,
// advancing a recurring one) and the request the fire makes commit together or not at all, only
// for the due time the firer read (so processes sharing the file fire it once), and a schedule
// deleted meanwhile does not fire; due() takes the tenants in turns, each one's soonest first. The
// port is asynchronous; this libsql implementation runs its statements (and BEGIN IMMEDIATE around
// the checked ones) synchronously inside each method.
// The port's types are in schedules-port.ts (re-exported here); the rows both backends share in
// schedules-rows.ts.
import { type Database, guarded, immediate } from './db.ts';
import { prepareRequestInsert } from './requests.ts';
import type { ScheduleStore } from './schedules-port.ts';
import {
  dueInTurns,
  inTurns,
  newScheduleRecord,
  type ScheduleRow,
  scheduleInsertParams,
  toScheduleRecord,
} from './schedules-rows.ts';

export type { NewSchedule, ScheduleKind, ScheduleRecord, ScheduleStore } from './schedules-port.ts';

export const createScheduleStore = (db: Database, now: () => number = Date.now): ScheduleStore => {
  const count = db.prepare('SELECT count(*) AS n FROM schedules WHERE tenant_id = ? AND agent_id = ?');
  const countTenant = db.prepare('SELECT count(*) AS n FROM schedules WHERE tenant_id = ?');
  const insert = db.prepare(
    `INSERT INTO schedules (id, tenant_id, agent_id, prompt, kind, spec, every_ms, next_at, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const select = db.prepare(
    'SELECT * FROM schedules WHERE tenant_id = ? AND agent_id = ? ORDER BY created_at, rowid',
  );
  const remove = db.prepare('DELETE FROM schedules WHERE id = ? AND tenant_id = ? AND agent_id = ?');
  const removeAgent = db.prepare('DELETE FROM schedules WHERE agent_id = ?');
  const due = db.prepare('SELECT * FROM schedules WHERE next_at <= ? ORDER BY next_at, rowid LIMIT ?');
  // More due than one read takes: in turns across tenants (schedules-rows.ts).
  const dueTurns = db.prepare(dueInTurns('libsql'));
  const nextDue = db.prepare('SELECT min(next_at) AS at FROM schedules');
  const removeFired = db.prepare('DELETE FROM schedules WHERE id = ? AND next_at = ?');
  const insertRequest = prepareRequestInsert(db);
  const advance = db.prepare(
    'UPDATE schedules SET next_at = ?, fired = fired + 1, last_fired_at = ? WHERE id = ? AND next_at = ?',
  );

  return {
    create: async (input, maxPerAgent, maxPerTenant = Number.POSITIVE_INFINITY) =>
      guarded('create a schedule', () =>
        immediate(db, () => {
          const { n } = count.all(input.tenantId, input.agentId)[0] as { n: number };
          const tenant = Number.isFinite(maxPerTenant)
            ? { n: (countTenant.all(input.tenantId)[0] as { n: number }).n, max: maxPerTenant }
            : undefined;
          const record = newScheduleRecord(input, n, maxPerAgent, now(), tenant);
          insert.run(...scheduleInsertParams(record));
          return record;
        }),
      ),
    list: async (tenantId, agentId) =>
      guarded('list schedules', () => (select.all(tenantId, agentId) as ScheduleRow[]).map(toScheduleRecord)),
    delete: async (tenantId, agentId, id) =>
      guarded('delete a schedule', () => remove.run(id, tenantId, agentId).changes > 0),
    deleteAgent: async (agentId) => guarded('delete schedules', () => removeAgent.run(agentId).changes),
    due: async (at, limit) =>
      guarded('read due schedules', () => {
        const soonest = due.all(at, limit + 1) as ScheduleRow[];
        const rows = soonest.length <= limit ? inTurns(soonest) : (dueTurns.all(at, limit) as ScheduleRow[]);
        return rows.map(toScheduleRecord);
      }),
    nextDue: async () =>
      guarded('read due schedules', () => (nextDue.all()[0] as { at: number | null }).at ?? undefined),
    fire: async ({ id, dueAt }, firedAt, nextAt, request) =>
      guarded('fire a schedule', () =>
        immediate(db, () => {
          // Only the due time this firer read: a process sharing the file that fired it first wins.
          const changed =
            nextAt === undefined
              ? removeFired.run(id, dueAt).changes
              : advance.run(nextAt, firedAt, id, dueAt).changes;
          if (changed === 0) return false;
          if (request !== undefined) insertRequest(request);
          return true;
        }),
      ),
  };
};
