// Firing one due schedule: a pending `reminder` host request made in the same store transaction
// that removes a one-shot schedule or advances a recurring one (so it fires at most once per due
// time, across restarts too), then a `schedule.fired` event in the agent's session. A schedule
// whose agent is gone is removed instead. Periods missed while the control plane was down fire
// once, now, and the period restarts from now.
import * as v from 'valibot';
import type { RequestStore } from '../requests/index.ts';
import { reminderKind } from '../requests/index.ts';
import type { AgentStore, EventLog, ScheduleRecord, ScheduleStore } from '../store/index.ts';

/** What a fire touches: the scheduler's stores. */
export interface FireDeps {
  schedules: ScheduleStore;
  agents: AgentStore;
  requests: RequestStore;
  events: EventLog;
}

/** Fires `record` now; the `schedule.fired` append when it fired (the caller reports its failure). */
export function fireSchedule(
  options: FireDeps,
  ttlMs: number,
  record: ScheduleRecord,
  at: number,
): Promise<unknown> | undefined {
  const { schedules } = options;
  if (options.agents.get(record.tenantId, record.agentId) === undefined) {
    schedules.deleteAgent(record.agentId);
    return undefined;
  }
  const next =
    record.everyMs === undefined
      ? undefined
      : record.nextAt + record.everyMs > at
        ? record.nextAt + record.everyMs
        : at + record.everyMs;
  const payload = v.parse(reminderKind.payload, {
    scheduleId: record.id,
    prompt: record.prompt,
    dueAt: record.nextAt,
    firedAt: at,
    ...(record.everyMs === undefined ? {} : { everySeconds: record.everyMs / 1000 }),
  });
  let requestId = '';
  const fired = schedules.fire({ id: record.id, dueAt: record.nextAt }, at, next, () => {
    requestId = options.requests.create({
      sessionId: record.agentId,
      kind: reminderKind.name,
      callId: `schedule:${record.id}`,
      payload,
      expiresAt: at + ttlMs,
    }).id;
  });
  if (!fired) return undefined;
  return options.events.append([
    {
      sessionId: record.agentId,
      type: 'schedule.fired',
      surface: 'current',
      callId: `schedule:${record.id}`,
      data: { ...payload, requestId, ...(next === undefined ? {} : { nextAt: next }) },
    },
  ]);
}
