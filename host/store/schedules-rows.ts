// The rows of schedules (`schedules`) as both backends of the ScheduleStore read and write them:
// the row type, row → record, a new schedule's record and insert parameters, and the count limit's
// error. One module, so the libsql (schedules.ts) and PostgreSQL (pg/schedules.ts) backends mean
// the same by every column and refuse with the same words; each keeps only its SQL and its
// transaction. Imports no backend.
import { nanoid } from 'nanoid';
import { SandboxError } from '../errors.ts';
import type { NewSchedule, ScheduleKind, ScheduleRecord } from './schedules-port.ts';

export interface ScheduleRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  prompt: string;
  kind: ScheduleKind;
  spec: string;
  every_ms: number | null;
  next_at: number;
  fired: number;
  last_fired_at: number | null;
  created_at: number;
}

export const toScheduleRecord = (r: ScheduleRow): ScheduleRecord => {
  const record: ScheduleRecord = {
    id: r.id,
    tenantId: r.tenant_id,
    agentId: r.agent_id,
    prompt: r.prompt,
    kind: r.kind,
    spec: JSON.parse(r.spec),
    nextAt: r.next_at,
    fired: r.fired,
    createdAt: r.created_at,
  };
  if (r.every_ms !== null) record.everyMs = r.every_ms;
  if (r.last_fired_at !== null) record.lastFiredAt = r.last_fired_at;
  return record;
};

/**
 * The record create() stores for `input`, once the agent's `n` schedules left room under
 * `maxPerAgent` (LIMIT_EXCEEDED otherwise): a fresh id, never fired.
 */
export const newScheduleRecord = (
  input: NewSchedule,
  n: number,
  maxPerAgent: number,
  createdAt: number,
  tenant: { n: number; max: number } = { n: 0, max: Number.POSITIVE_INFINITY },
): ScheduleRecord => {
  if (n >= maxPerAgent)
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `This agent already has ${n} schedules, the most it may have; delete one (schedule_delete) first.`,
      { data: { limit: maxPerAgent } },
    );
  if (tenant.n >= tenant.max)
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `This tenant's agents already have ${tenant.n} schedules together, the most they may have; delete one (schedule_delete) first.`,
      { data: { limit: 'schedulesPerTenant', max: tenant.max } },
    );
  return { id: `sch_${nanoid(12)}`, ...input, fired: 0, createdAt };
};

/**
 * A new schedule's values for `INSERT INTO schedules (id, tenant_id, agent_id, prompt, kind, spec,
 * every_ms, next_at, created_at)`.
 */
export const scheduleInsertParams = (record: ScheduleRecord): (string | number | null)[] => [
  record.id,
  record.tenantId,
  record.agentId,
  record.prompt,
  record.kind,
  JSON.stringify(record.spec),
  record.everyMs ?? null,
  record.nextAt,
  record.createdAt,
];

/**
 * `rows` (due schedules, soonest first) in turns across tenants: every tenant's first, soonest first
 * among them, then every tenant's second, and so on. For a read that holds every due schedule (no
 * more than the limit are due), which dueInTurns's query would return in the same order.
 */
export const inTurns = (rows: ScheduleRow[]): ScheduleRow[] => {
  const seen = new Map<string, number>();
  const turns = rows.map((row) => {
    const turn = (seen.get(row.tenant_id) ?? 0) + 1;
    seen.set(row.tenant_id, turn);
    return { row, turn };
  });
  // Array.prototype.sort is stable: within a turn the rows keep their soonest-first order.
  return turns.sort((a, b) => a.turn - b.turn).map(({ row }) => row);
};

/**
 * due()'s query when more are due than one read takes (below that, each backend reads the soonest
 * `limit + 1` as before and puts them in turns, inTurns). The tenants take turns: each tenant's
 * soonest due schedule in the first turn (soonest first among them), each one's next in the
 * second, and so on. Why: read soonest first across tenants, one tenant's burst of schedules due at
 * one time (more than a wake-up fires) held every other tenant's due then behind all of theirs, a
 * wake-up per batch.
 * Its cost is bounded by the tenants, not by the due rows: a window over all due rows sorted the
 * whole backlog at every read (10,000 due: 30-45 ms a read of 100 on libsql, on the API's thread),
 * so it finds the tenants with anything due by skipping along schedules_tenant_due (one probe a
 * tenant that has schedules), then reads at most a share of the limit from each (limit / tenants
 * with anything due, rounded up) off the same index. A tenant with fewer than its share due leaves
 * the read short of the limit; the scheduler reads again at once (nothing is lost, only deferred).
 * Figures: bench/schedule-turns.ts. SQLite has no LATERAL: there each tenant's share is an IN list.
 */
export const dueInTurns = (backend: 'libsql' | 'postgres', columns = '*'): string => {
  const [at, limit] = backend === 'libsql' ? ['?1', '?2'] : ['$1', '$2::bigint'];
  const share = `SELECT CAST((${limit} + count(*) - 1) / ${backend === 'libsql' ? 'max' : 'greatest'}(count(*), 1) AS bigint) AS k FROM due_owners`;
  const mine = `SELECT ${backend === 'libsql' ? 'rowid' : '*'} FROM schedules WHERE tenant_id = d.id AND next_at <= ${at}
        ORDER BY next_at, rowid LIMIT (SELECT k FROM share)`;
  const each =
    backend === 'libsql'
      ? `due_owners d JOIN schedules s ON s.rowid IN (${mine})`
      : `due_owners d CROSS JOIN LATERAL (${mine}) s`;
  return `WITH RECURSIVE owners(id) AS (
      SELECT min(tenant_id) FROM schedules
      UNION ALL
      SELECT (SELECT min(tenant_id) FROM schedules WHERE tenant_id > owners.id) FROM owners WHERE owners.id IS NOT NULL
    ),
    due_owners AS (
      SELECT id FROM owners
      WHERE id IS NOT NULL AND EXISTS (SELECT 1 FROM schedules WHERE tenant_id = owners.id AND next_at <= ${at})
    ),
    share AS (${share})
    SELECT ${columns} FROM (
      SELECT s.*, s.rowid AS r, row_number() OVER (PARTITION BY s.tenant_id ORDER BY s.next_at, s.rowid) AS turn
      FROM ${each}
    ) AS due ORDER BY turn, next_at, r LIMIT ${limit}`;
};
