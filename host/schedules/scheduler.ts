// The scheduler: validates schedule_create's times (schedule-time.ts), keeps schedules in the store
// and fires them when due: a `schedule.fired` event in the agent's session (surface `current`: the
// model's history) and a pending `reminder` host request the client answers by running the prompt.
// One timer, armed for the soonest schedule of the store (the store is asynchronous: of two arms
// in flight, the later read sets the timer); start() reads them all, so a schedule that fell due
// while the control plane was down fires once at start, and a recurring one that missed several
// periods fires once and then keeps its period from now.
// Invariants: a fire removes a one-shot schedule (or advances a recurring one) in the same
// transaction that makes its request, so it fires at most once per due time even across restarts;
// a schedule whose agent is gone never fires and is removed, and one stored after its agent's
// deletion swept the agent's schedules removes itself at create (read after the write); the count
// per agent and the shortest period are enforced at create; a failed read or fire is tried again
// after RETRY_MS, never at once.
// With replicas each one arms its timer from the same store, and only the owner of an agent's
// family fires its schedules (`mayFire`); the due-time fence makes a fire during a fail-over once.
// A replica reads past the due schedules it may not fire (`others`), so a backlog of a dead owner's
// (due until its lease runs out) does not hold back its own.
import { SandboxError } from '../errors.ts';
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
  /**
   * Schedules all of one tenant's agents may have together. Default 1024. Why: every fire takes the
   * API's thread (~0.25 ms), and a tenant with no agents quota could otherwise fill it with its
   * agents' schedules and delay every other tenant's behind theirs.
   */
  maxPerTenant?: number;
  /** Shortest period of a recurring schedule in ms. Default 60000. */
  minPeriodMs?: number;
  /** How long the client has to answer a reminder. Default one day. */
  reminderTtlMs?: number;
  /** Told about fires that failed (the store, the log); the scheduler carries on. */
  onError?: (error: unknown) => void;
  /**
   * Replicas: whether this process fires the schedule (it owns, or has just taken, the agent's
   * family). One it may not fire is the owner's; it is looked at again after RETRY_MS, and fired
   * here only once its owner is gone and this replica took the family. Default: every schedule.
   */
  mayFire?: (record: ScheduleRecord) => Promise<boolean>;
}

export interface Scheduler extends ScheduleService {
  /** Arms the timer from the store (fires what is already due), in the background. */
  start(): void;
  /**
   * Removes every schedule of a deleted agent. Never rejects: a failure goes to onError, and the
   * fire removes what is left (its agent is gone).
   */
  removeAgent(agentId: string): Promise<void>;
  /** Stops the timer; stored schedules stay for the next start. */
  close(): void;
}

/** setTimeout's limit; a later schedule re-arms on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How long after a failed read or fire the store is asked again. */
const RETRY_MS = 5000;
/**
 * Schedules fired per wake-up; the rest fire at the next one, right after. The store's due() takes
 * them in turns across tenants, so one tenant's burst does not hold back another's schedule.
 */
const FIRE_BATCH = 100;
/** Others' due schedules a replica reads past (each costs a row more per read); past it, it waits RETRY_MS. */
const MAX_OTHERS = 1000;

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

/**
 * The agent's deletion may have swept its schedules (after its stamp) before the schedule was
 * stored: read after the write, so whichever comes second sees the other, and a schedule of an
 * agent already stamped goes again (were this delete to fail, its fire removes it).
 */
async function dropIfOrphaned(options: SchedulerOptions, owner: ScheduleOwner, id: string): Promise<void> {
  if ((await options.agents.get(owner.tenantId, owner.agentId)) !== undefined) return;
  await options.schedules.delete(owner.tenantId, owner.agentId, id);
  throw new SandboxError('NOT_FOUND', `Agent ${owner.agentId} was deleted.`, {
    data: { agentId: owner.agentId },
  });
}

/**
 * Fires up to FIRE_BATCH of what is due at `at`, each on its own. `others` holds the due schedules
 * this replica may not fire (`mayFire` said no) and when to ask about each again: the read goes
 * past them, so they never hold back this replica's own (a dead owner's stay due until its lease
 * runs out). `full`: the read may have left more due. Never rejects.
 */
async function fireDue(
  options: SchedulerOptions,
  ttlMs: number,
  others: Map<string, number>,
  at: number,
): Promise<{ failed: boolean; full: boolean }> {
  let failed = false;
  let full = false;
  try {
    for (const [id, until] of others) if (until <= at) others.delete(id);
    const limit = FIRE_BATCH + others.size;
    const read = await options.schedules.due(at, limit);
    full = read.length >= limit;
    for (const record of read.filter((r) => !others.has(r.id)).slice(0, FIRE_BATCH)) {
      try {
        // Another replica's: its owner fires it; look again later in case the owner is gone.
        if (options.mayFire !== undefined && !(await options.mayFire(record))) {
          if (others.size < MAX_OTHERS) others.set(record.id, at + RETRY_MS);
          else failed = true;
          continue;
        }
        await fireSchedule(options, ttlMs, record, at);
      } catch (error) {
        failed = true;
        options.onError?.(error);
      }
    }
  } catch (error) {
    failed = true;
    options.onError?.(error);
  }
  return { failed, full };
}

export function createScheduler(options: SchedulerOptions): Scheduler {
  const { schedules } = options;
  const now = options.now ?? Date.now;
  const maxPerAgent = options.maxPerAgent ?? 32;
  const maxPerTenant = options.maxPerTenant ?? 1024;
  const minPeriodMs = options.minPeriodMs ?? 60_000;
  const ttlMs = options.reminderTtlMs ?? 24 * 3600 * 1000;
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  let closed = false;
  /** Bumped by every arm(): only the latest one's read of the store sets the timer. */
  let arming = 0;

  async function create(owner: ScheduleOwner, request: ScheduleRequest): Promise<ScheduleView> {
    const { kind, nextAt, everyMs } = timingOf(request, now(), minPeriodMs);
    const { prompt, ...spec } = request;
    const record = await schedules.create(
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
      maxPerTenant,
    );
    await dropIfOrphaned(options, owner, record.id);
    await arm();
    return scheduleView(record);
  }

  /** Others' due schedules and when to ask about each again (fireDue). */
  const others = new Map<string, number>();

  /** The timer ran out: fires what is due (each fire on its own), then re-arms. Never rejects. */
  async function wake(): Promise<void> {
    timer = undefined;
    if (closed) return;
    const { failed, full } = await fireDue(options, ttlMs, others, now());
    // A fire that failed left its schedule due: without a pause it would be fired again at once.
    // A full read may have left more due: at once. Else not before others' are asked about again.
    await arm(failed ? now() + RETRY_MS : full || others.size === 0 ? 0 : Math.min(...others.values()));
  }

  /** (Re-)arms the one timer for the soonest schedule, not before `notBefore`. Never rejects. */
  async function arm(notBefore = 0): Promise<void> {
    if (!started || closed) return;
    const mine = ++arming;
    let next: number | undefined;
    try {
      next = await schedules.nextDue();
    } catch (error) {
      options.onError?.(error);
      next = now() + RETRY_MS; // the store failed: look again soon
    }
    // A later arm() read the store after this one did, or the scheduler closed meanwhile.
    if (mine !== arming || closed) return;
    clearTimeout(timer);
    timer = undefined;
    if (next === undefined && options.mayFire === undefined) return;
    timer = setTimeout(
      () => void wake(),
      // With replicas, schedules made on another replica are not announced here: look every RETRY_MS.
      Math.min(
        options.mayFire === undefined ? MAX_TIMER_MS : RETRY_MS,
        Math.max(0, (next ?? Number.POSITIVE_INFINITY) - now(), notBefore - now()),
      ),
    );
    // The HTTP server keeps the process up; a scheduler alone must not.
    timer.unref();
  }

  return {
    create,
    list: async (owner) => (await schedules.list(owner.tenantId, owner.agentId)).map(scheduleView),
    async delete(owner, id) {
      const deleted = await schedules.delete(owner.tenantId, owner.agentId, id);
      if (deleted) await arm();
      return deleted;
    },
    start() {
      if (started || closed) return;
      started = true;
      void arm();
    },
    async removeAgent(agentId) {
      try {
        if ((await schedules.deleteAgent(agentId)) > 0) await arm();
      } catch (error) {
        // Left for the fire: a schedule whose agent is gone is removed when it falls due.
        options.onError?.(error);
      }
    },
    close() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
