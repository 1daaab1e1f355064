// The ScheduleStore port: an agent's durable reminders as every backend keeps them (libsql:
// schedules.ts, PostgreSQL: pg/schedules.ts, their shared rows: schedules-rows.ts). Types only.
import type { JsonValue } from '../json.ts';
import type { HostRequest } from '../requests/port.ts';

export type ScheduleKind = 'after' | 'every' | 'at';

export interface ScheduleRecord {
  id: string;
  tenantId: string;
  agentId: string;
  prompt: string;
  kind: ScheduleKind;
  /** The schedule as it was asked for (`after_seconds`, `every_seconds` or `at`), for listing. */
  spec: JsonValue;
  /** The period of a recurring schedule. */
  everyMs?: number;
  /** When it fires next (epoch ms). */
  nextAt: number;
  /** How often it has fired. */
  fired: number;
  lastFiredAt?: number;
  createdAt: number;
}

/** A schedule before the store gave it an id and a history. */
export type NewSchedule = Omit<ScheduleRecord, 'id' | 'fired' | 'lastFiredAt' | 'createdAt'>;

/** Every method is asynchronous, so a network database can back it. */
export interface ScheduleStore {
  /**
   * LIMIT_EXCEEDED when the agent already has `maxPerAgent` schedules, or its tenant (all its
   * agents) `maxPerTenant` (default: no bound).
   */
  create(input: NewSchedule, maxPerAgent: number, maxPerTenant?: number): Promise<ScheduleRecord>;
  /** The agent's schedules, oldest first. */
  list(tenantId: string, agentId: string): Promise<ScheduleRecord[]>;
  /** False when the agent has no such schedule. */
  delete(tenantId: string, agentId: string, id: string): Promise<boolean>;
  /** Removes every schedule of an agent (it was deleted); returns how many. */
  deleteAgent(agentId: string): Promise<number>;
  /**
   * Schedules due at `now`, at most `limit`, in turns across tenants: every tenant's soonest first
   * (soonest first among them), then every tenant's second, and so on; so one tenant's many due
   * schedules do not hold back another tenant's.
   */
  due(now: number, limit: number): Promise<ScheduleRecord[]>;
  /** The soonest next_at of all schedules, undefined when there are none. */
  nextDue(): Promise<number | undefined>;
  /**
   * Records that the schedule due at `dueAt` fired at `firedAt`: a recurring one moves to `nextAt`,
   * any other is removed; `request` (drafted by the RequestStore, which adopts it afterwards) is
   * written in the same transaction (none: the schedule's last reminder is still pending). False (and nothing written) when the schedule was gone or
   * another process sharing the database fired that due time first.
   */
  fire(
    schedule: { id: string; dueAt: number },
    firedAt: number,
    nextAt: number | undefined,
    request: HostRequest | undefined,
  ): Promise<boolean>;
}
