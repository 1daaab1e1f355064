// The scheduler: validates schedule_create's times (schedule-time.ts), keeps schedules in the store
// and fires them when due: a `schedule.fired` event in the agent's session (surface `current`: the
// model's history) and a pending `reminder` host request the client answers by running the prompt.
// One timer, armed for the soonest schedule of the store; start() reads them all, so a schedule
// that fell due while the control plane was down fires once at start, and a recurring one that
// missed several periods fires once and then keeps its period from now.
// Invariants: a fire removes a one-shot schedule (or advances a recurring one) in the same
// transaction that makes its request, so it fires at most once per due time even across restarts;
// a schedule whose agent is gone never fires and is removed; the count per agent and the shortest
// period are enforced at create.
import type { RequestStore } from '../requests/index.ts';
import type { AgentStore, EventLog, ScheduleRecord, ScheduleStore } from '../store/index.ts';
import type {
  ScheduleOwner,
  ScheduleRequest,
  ScheduleService,
  ScheduleView,
} from '../tools/builtin/schedules.ts';
import { fireSchedule } from './fire.ts';
import { iso, timingOf } from './timing.ts';

export interface SchedulerOptions {
  schedules: ScheduleStore;
  events: EventLog;
  requests: RequestStore;
  agents: AgentStore;
  /** Clock. Default Date.now. */
  now?: () => number;
  /** Schedules one agent may have. Default 32. */
  maxPerAgent?: number;
  /** Shortest period of a recurring schedule in ms. Default 60000. */
  minPeriodMs?: number;
  /** How long the client has to answer a reminder. Default one day. */
  reminderTtlMs?: number;
  /** Told about fires that failed (the store, the log); the scheduler carries on. */
  onError?: (error: unknown) => void;
}

export interface Scheduler extends ScheduleService {
  /** Arms the timer from the store (fires what is already due). */
  start(): void;
  /** Removes every schedule of a deleted agent. */
  removeAgent(agentId: string): void;
  /** Stops the timer; stored schedules stay for the next start. */
  close(): void;
}

/** setTimeout's limit; a later schedule re-arms on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Schedules fired per wake-up; the rest fire at the next one, right after. */
const FIRE_BATCH = 100;

export const scheduleView = (record: ScheduleRecord): ScheduleView => {
  const view: ScheduleView = {
    id: record.id,
    prompt: record.prompt,
    kind: record.kind,
    spec: record.spec,
    next_at: iso(record.nextAt),
    fired: record.fired,
    created_at: iso(record.createdAt),
  };
  if (record.everyMs !== undefined) view.every_seconds = record.everyMs / 1000;
  return view;
};

export function createScheduler(options: SchedulerOptions): Scheduler {
  const { schedules } = options;
  const now = options.now ?? Date.now;
  const maxPerAgent = options.maxPerAgent ?? 32;
  const minPeriodMs = options.minPeriodMs ?? 60_000;
  const ttlMs = options.reminderTtlMs ?? 24 * 3600 * 1000;
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  let closed = false;

  function create(owner: ScheduleOwner, request: ScheduleRequest): ScheduleView {
    const { kind, nextAt, everyMs } = timingOf(request, now(), minPeriodMs);
    const { prompt, ...spec } = request;
    const record = schedules.create(
      {
        tenantId: owner.tenantId,
        agentId: owner.agentId,
        prompt,
        kind,
        spec,
        ...(everyMs === undefined ? {} : { everyMs }),
        nextAt,
      },
      maxPerAgent,
    );
    arm();
    return scheduleView(record);
  }

  function wake(): void {
    timer = undefined;
    if (closed) return;
    try {
      const at = now();
      for (const record of schedules.due(at, FIRE_BATCH)) {
        try {
          fireSchedule(options, ttlMs, record, at)?.catch((error: unknown) => options.onError?.(error));
        } catch (error) {
          options.onError?.(error);
        }
      }
    } catch (error) {
      options.onError?.(error);
    }
    arm();
  }

  /** (Re-)arms the one timer for the soonest schedule. */
  function arm(): void {
    if (!started || closed) return;
    clearTimeout(timer);
    timer = undefined;
    let next: number | undefined;
    try {
      next = schedules.nextDue();
    } catch (error) {
      options.onError?.(error);
      next = now() + 5000; // the store failed: look again soon
    }
    if (next === undefined) return;
    timer = setTimeout(wake, Math.min(MAX_TIMER_MS, Math.max(0, next - now())));
    // The HTTP server keeps the process up; a scheduler alone must not.
    timer.unref();
  }

  return {
    create,
    list: (owner) => schedules.list(owner.tenantId, owner.agentId).map(scheduleView),
    delete(owner, id) {
      const deleted = schedules.delete(owner.tenantId, owner.agentId, id);
      if (deleted) arm();
      return deleted;
    },
    start() {
      if (started || closed) return;
      started = true;
      arm();
    },
    removeAgent(agentId) {
      if (schedules.deleteAgent(agentId) > 0) arm();
    },
    close() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
