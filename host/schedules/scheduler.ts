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
import * as v from 'valibot';
import { SandboxError } from '../errors.ts';
import type { RequestStore } from '../requests/index.ts';
import { reminderKind } from '../requests/index.ts';
import type { AgentStore, EventLog, ScheduleRecord, ScheduleStore } from '../store/index.ts';
import type {
  ScheduleOwner,
  ScheduleRequest,
  ScheduleService,
  ScheduleView,
} from '../tools/builtin/schedules.ts';
import { instantOf } from './schedule-time.ts';

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

/** Furthest ahead a schedule may be, and longest period: one year. */
const MAX_AHEAD_MS = 366 * 24 * 3600 * 1000;
/** setTimeout's limit; a later schedule re-arms on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Schedules fired per wake-up; the rest fire at the next one, right after. */
const FIRE_BATCH = 100;

const iso = (t: number): string => new Date(t).toISOString();

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

  function seconds(name: string, value: number, minMs: number): number {
    const ms = Math.round(value * 1000);
    if (!Number.isFinite(value) || ms < minMs || ms > MAX_AHEAD_MS)
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `${name} must be between ${minMs / 1000} and ${MAX_AHEAD_MS / 1000} seconds (got ${value}).`,
      );
    return ms;
  }

  function create(owner: ScheduleOwner, request: ScheduleRequest): ScheduleView {
    const t = now();
    let kind: ScheduleRecord['kind'];
    let nextAt: number;
    let everyMs: number | undefined;
    if (request.after_seconds !== undefined) {
      kind = 'after';
      nextAt = t + seconds('after_seconds', request.after_seconds, 1);
    } else if (request.every_seconds !== undefined) {
      kind = 'every';
      everyMs = seconds('every_seconds', request.every_seconds, minPeriodMs);
      nextAt = t + everyMs;
    } else if (request.at !== undefined) {
      kind = 'at';
      nextAt = instantOf(request.at);
      if (nextAt <= t)
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          `at is ${iso(nextAt)}, which has passed (it is ${iso(t)} now); give a future time.`,
        );
      if (nextAt - t > MAX_AHEAD_MS)
        throw new SandboxError('INVALID_ARGUMENTS', `at is more than a year ahead (${iso(nextAt)}).`);
    } else {
      throw new SandboxError('INVALID_ARGUMENTS', 'Give exactly one of after_seconds, every_seconds or at.');
    }
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

  /** Fires one due schedule (see the header). */
  function fire(record: ScheduleRecord, at: number): void {
    if (options.agents.get(record.tenantId, record.agentId) === undefined) {
      schedules.deleteAgent(record.agentId);
      return;
    }
    // Periods missed while the control plane was down fire once, now; the period restarts from now.
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
    if (!fired) return;
    options.events.append([
      {
        sessionId: record.agentId,
        type: 'schedule.fired',
        surface: 'current',
        callId: `schedule:${record.id}`,
        data: { ...payload, requestId, ...(next === undefined ? {} : { nextAt: next }) },
      },
    ]);
  }

  function wake(): void {
    timer = undefined;
    if (closed) return;
    try {
      const at = now();
      for (const record of schedules.due(at, FIRE_BATCH)) {
        try {
          fire(record, at);
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
