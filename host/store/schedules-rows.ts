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
