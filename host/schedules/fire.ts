// Firing one due schedule: a pending `reminder` host request (drafted by the request store, which
// adopts it once written) made in the same store transaction that removes a one-shot schedule or
// advances a recurring one (so it fires at most once per due time, across restarts too), then a
// `schedule.fired` event in the agent's session. A schedule
// whose agent is gone is removed instead. Periods missed while the control plane was down fire
// once, now, and the period restarts from now.
import * as v from 'valibot';
import type { RequestStore } from '../requests/index.ts';
import { reminderKind } from '../requests/index.ts';
import type { AgentStore, EventLog, ScheduleRecord, ScheduleStore } from '../store/index.ts';

/** The call id of a schedule's reminders and events. */
const callIdOf = (record: ScheduleRecord): string => `schedule:${record.id}`;

/** What a fire touches: the scheduler's stores. */
export interface FireDeps {
  schedules: ScheduleStore;
  agents: AgentStore;
  requests: RequestStore;
  events: EventLog;
}

/** Fires `record` now; rejects when the store failed or the log refused `schedule.fired` (the caller reports it). */
export async function fireSchedule(
  options: FireDeps,
  ttlMs: number,
  record: ScheduleRecord,
  at: number,
): Promise<void> {
  const { schedules } = options;
  if ((await options.agents.get(record.tenantId, record.agentId)) === undefined) {
    await schedules.deleteAgent(record.agentId);
    return;
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
  // A recurring schedule whose last reminder is still pending gets no second one: the client has
  // that one to answer, and unanswered reminders would otherwise pile up (one a period, each kept
  // ttlMs with an expiry timer here).
  const unanswered =
    next === undefined
      ? undefined
      : (await options.requests.list(record.agentId, 'pending')).find((r) => r.callId === callIdOf(record));
  // Drafted here, written by the schedule store in the fire's own transaction, adopted after it.
  const reminder =
    unanswered === undefined
      ? options.requests.draft({
          sessionId: record.agentId,
          kind: reminderKind.name,
          callId: callIdOf(record),
          payload,
          expiresAt: at + ttlMs,
        })
      : undefined;
  const fired = await schedules.fire({ id: record.id, dueAt: record.nextAt }, at, next, reminder);
  if (!fired) return;
  const requestId =
    reminder === undefined ? (unanswered?.id ?? '') : (await options.requests.adopt(reminder)).id;
  await options.events.append([
    {
      sessionId: record.agentId,
      type: 'schedule.fired',
      surface: 'current',
      callId: callIdOf(record),
      data: {
        ...payload,
        requestId,
        ...(next === undefined ? {} : { nextAt: next }),
        ...(unanswered === undefined ? {} : { unanswered: true }),
      },
    },
  ]);
}
