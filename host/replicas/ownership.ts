// Ownership of agent families across replicas on one PostgreSQL database: which replica runs an
// agent's family, taken on first use by a lease with an epoch (host/store/pg/leases.ts), renewed
// in the background, handed over at a clean stop, and taken over by another replica once it
// expires (the owner crashed, was paused or cut off). route() is what the API asks for every
// request about one agent: serve it here, or forward it to the owner's URL.
// Invariants: this replica runs a family's work only while the fence holds it (fence.ts), and the
// database refuses its event writes once another replica took it (the epoch in every write);
// taking a family over first binds its sessions, forgets their seqs (another replica wrote
// since), holds the new epoch, and then runs the takeover hooks (the log's interrupted calls
// repaired, its plugins resumed) before any request of the family is served here; a family found
// lost (renewal, or a refused write) runs the lost hooks once, which stop its work here; renewal
// never counts a family lost that was taken after the renewal's query was sent; a family whose
// hold was last confirmed more than half a lease ago (the process was stopped or starved) is
// served here only after a renewal says it is still held. A family stays with its live holder: a
// late renewal keeps what nobody took meanwhile (in its epoch), and a replica that resumes after
// another took its family finds it lost before it serves anything and forwards to the holder.
import { SandboxError } from '../errors.ts';
import type { AgentRecord, AgentStore } from '../store/agents-port.ts';
import type { ClosableEventLog } from '../store/event-log-port.ts';
import type { LeaseStore } from '../store/leases-port.ts';
import { createFamilies, type Families } from './family.ts';
import type { ReplicaFence } from './fence.ts';

/** How long a lease lasts without renewal, and how often it is renewed. */
export const LEASE_TTL_MS = 15_000;
export const LEASE_RENEW_MS = 3_000;
/** How long a forward target is remembered before the lease is read again. */
const TARGET_MS = 1_000;

/** Where a request goes; a forward's signal aborts once its owner is found gone (see watch()). */
export type Route =
  | { kind: 'local' }
  | { kind: 'forward'; url: string; replicaId: string; signal?: AbortSignal };

/** A family this replica has just taken: its tenant and live agents (their sessions). */
export interface Takeover {
  familyId: string;
  tenantId: string;
  agentIds: readonly string[];
  epoch: number;
}

export interface OwnershipOptions {
  /** The lease holder: the replica id and a part new at every start (`<id>:<start>`). */
  replicaId: string;
  /** The replica id alone: earlier holders of it are retired at start (LeaseStore.register). */
  replicaOf?: string;
  leases: LeaseStore;
  agents: AgentStore;
  events: ClosableEventLog;
  fence: ReplicaFence;
  ttlMs?: number;
  renewMs?: number;
  onError?: (error: unknown) => void;
}

export interface Ownership {
  readonly replicaId: string;
  /** Where a request about the agent is served (see the header). */
  route(tenantId: string, agentId: string, options?: { forwarded?: boolean }): Promise<Route>;
  /** Whether this replica runs the agent's family now, taking it when nobody does. */
  claim(tenantId: string, agentId: string): Promise<boolean>;
  /** A forward to the family's owner failed: read its lease again next time. */
  unreachable(tenantId: string, agentId: string): void;
  /** A new agent: children and teammates join their parent's family here at once. */
  created(record: AgentRecord): void;
  /**
   * An agent was deleted whole (delete() is done): a top-level agent's family is gone, so its lease
   * row is removed and this replica forgets it (renewals stay as many as the families alive).
   */
  deleted(tenantId: string, agentId: string): Promise<void>;
  onTakeover(hook: (takeover: Takeover) => Promise<void>): void;
  onLost(hook: (lost: { familyId: string; tenantId: string; agentIds: readonly string[] }) => void): void;
  /** Families held now. */
  held(): string[];
  /** Registers this replica (reachable at `url`) and starts renewing. */
  start(url: string): Promise<void>;
  /** Stops renewing and ends every lease at once, so the other replicas take the families now. */
  close(): Promise<void>;
}

interface OwnershipState {
  o: OwnershipOptions;
  ttlMs: number;
  families: Families;
  /** Takeovers in progress: requests of the family wait for them. */
  taking: Map<string, Promise<Route>>;
  /** When each family was taken (performance.now()), for renewal's race (see the header). */
  takenAt: Map<string, number>;
  /** Forward targets, remembered briefly. */
  targets: Map<string, { route: Route; until: number }>;
  /** Families forwarded to another owner: aborted when a renewal tick finds that owner gone. */
  watched: Map<string, { replicaId: string; controller: AbortController }>;
  takeoverHooks: ((takeover: Takeover) => Promise<void>)[];
  /** Each held family's tenant (what the lost hooks are told). */
  tenantOf: Map<string, string>;
  lastRenewed: number;
  /** The renewal a stale hold waits for (one at a time; see confirmed()). */
  confirming: Promise<void> | undefined;
  timer: NodeJS.Timeout | undefined;
  closed: boolean;
}

const LOCAL: Route = { kind: 'local' };

async function takeOver(s: OwnershipState, tenantId: string, familyId: string, epoch: number): Promise<void> {
  const { fence, events } = s.o;
  const agentIds = await s.families.members(tenantId, familyId);
  for (const id of agentIds) {
    fence.bind(id, familyId);
    events.forget(id);
  }
  fence.hold(familyId, epoch);
  s.tenantOf.set(familyId, tenantId);
  s.takenAt.set(familyId, performance.now());
  let failed: unknown;
  for (const hook of s.takeoverHooks) {
    try {
      await hook({ familyId, tenantId, agentIds, epoch });
    } catch (error) {
      s.o.onError?.(error);
      failed ??= error;
    }
  }
  if (failed !== undefined) await abandon(s, familyId, failed);
}

/**
 * A takeover whose hooks did not all finish (the repair's appends refused, the store failing) is
 * not kept half done: what started here is stopped (the lost hooks), the lease is ended, and the
 * request fails retryable, so the next one takes the family again, one epoch up, hooks and all.
 */
async function abandon(s: OwnershipState, familyId: string, cause: unknown): Promise<never> {
  s.o.fence.lost([familyId]);
  await s.o.leases.release(familyId, s.o.replicaId).catch((error: unknown) => s.o.onError?.(error));
  throw new SandboxError(
    'OWNER_UNREACHABLE',
    'Taking this agent over did not finish here; retry the request.',
    {
      data: { retryAfterMs: 1000 },
      cause,
    },
  );
}

async function take(
  s: OwnershipState,
  tenantId: string,
  familyId: string,
  forwarded: boolean,
): Promise<Route> {
  const { o } = s;
  const acquired = await o.leases.acquire(familyId, o.replicaId, s.ttlMs);
  if (acquired.held) {
    await takeOver(s, tenantId, familyId, acquired.epoch);
    return LOCAL;
  }
  const { lease } = acquired;
  if (forwarded)
    throw new SandboxError('OWNER_MOVED', 'This agent is run by another replica now; retry the request.', {
      data: { retryAfterMs: 1000 },
    });
  if (lease.url === undefined)
    throw new SandboxError(
      'OWNER_UNREACHABLE',
      'The replica running this agent is not reachable; retry once its lease has expired.',
      { data: { retryAfterMs: 1000 } },
    );
  const route: Route = {
    kind: 'forward',
    url: lease.url,
    replicaId: lease.replicaId,
    signal: watch(s, familyId, lease.replicaId),
  };
  s.targets.set(familyId, { route, until: performance.now() + TARGET_MS });
  return route;
}

/**
 * Whether this replica's hold on the family was confirmed by the database within half a lease
 * (the last renewal, or the taking, was sent since). The monotonic clock runs on while the process
 * is stopped (SIGSTOP, a VM paused), so a process that resumes after its lease ran out knows it
 * must ask before it serves the family: else a request it read on resuming ran here (in the
 * sandbox) while another replica owned the family, before its next renewal found the loss.
 */
const confirmedLately = (s: OwnershipState, familyId: string, share = 0.5): boolean =>
  performance.now() - Math.max(s.lastRenewed, s.takenAt.get(familyId) ?? 0) < s.ttlMs * share;

/** A renewal now (shared by every request that waits for one): the families it finds lost are dropped. */
function confirmed(s: OwnershipState): Promise<void> {
  s.confirming ??= renew(s).finally(() => {
    s.confirming = undefined;
  });
  return s.confirming;
}

/**
 * Whether the family is held here, asking the database first when the hold is stale. A renewal
 * under way may have been sent before the process was stopped: its answer is the database's word
 * for then (it leaves the hold stale), so one more renewal, sent now, is asked for. A renewal that
 * fails leaves it as it was (appends stay refused until one answers: the fence's freshness).
 */
async function holdsNow(s: OwnershipState, familyId: string): Promise<boolean> {
  for (let asked = 0; asked < 2 && s.o.fence.holds(familyId) && !confirmedLately(s, familyId); asked++)
    await confirmed(s);
  return s.o.fence.holds(familyId);
}

async function routeFamily(
  s: OwnershipState,
  tenantId: string,
  agentId: string,
  familyId: string,
  forwarded: boolean,
): Promise<Route> {
  const { fence } = s.o;
  const taking = s.taking.get(familyId);
  if (taking !== undefined) {
    const route = await taking;
    if (route.kind === 'local') fence.bind(agentId, familyId);
    return route;
  }
  if (await holdsNow(s, familyId)) {
    fence.bind(agentId, familyId);
    return LOCAL;
  }
  const target = s.targets.get(familyId);
  if (target !== undefined && !forwarded && target.until > performance.now()) return target.route;
  const started = take(s, tenantId, familyId, forwarded).finally(() => {
    if (s.taking.get(familyId) === started) s.taking.delete(familyId);
  });
  s.taking.set(familyId, started);
  const route = await started;
  if (route.kind === 'local') fence.bind(agentId, familyId);
  return route;
}

/** Most families watched at once; past it the oldest watch is dropped (not aborted). */
const WATCHED = 10_000;

/** The signal of requests forwarded to the family's owner `replicaId` (one per family and owner). */
function watch(s: OwnershipState, familyId: string, replicaId: string): AbortSignal {
  const known = s.watched.get(familyId);
  if (known?.replicaId === replicaId) return known.controller.signal;
  known?.controller.abort();
  if (s.watched.size >= WATCHED) {
    const oldest = s.watched.keys().next().value;
    if (oldest !== undefined) s.watched.delete(oldest);
  }
  const controller = new AbortController();
  s.watched.set(familyId, { replicaId, controller });
  return controller.signal;
}

/**
 * One read of the watched families' leases: a family whose owner's lease ran out (or moved on)
 * aborts what was forwarded to that owner, so a request does not hang on a replica that stopped.
 */
async function checkWatched(s: OwnershipState): Promise<void> {
  if (s.watched.size === 0) return;
  const leases = new Map((await s.o.leases.leases([...s.watched.keys()])).map((l) => [l.familyId, l]));
  for (const [familyId, watched] of s.watched) {
    const lease = leases.get(familyId);
    if (lease !== undefined && !lease.expired && lease.replicaId === watched.replicaId) continue;
    s.watched.delete(familyId);
    s.targets.delete(familyId);
    watched.controller.abort(
      new SandboxError('OWNER_UNREACHABLE', `The replica ${watched.replicaId} that ran this agent is gone.`),
    );
  }
}

async function renew(s: OwnershipState): Promise<void> {
  const { o } = s;
  const sentAt = performance.now();
  // What it holds, in which epoch: a renewal that comes late (this process starved or stopped past
  // the lease) keeps those nobody took meanwhile, instead of losing them and taking them again one
  // epoch up, while a replica that resumed meanwhile could take them back (leases-port.ts).
  const holding = o.fence.held().flatMap((familyId) => {
    const token = o.fence.tokenOfFamily(familyId);
    return token === undefined ? [] : [{ familyId, epoch: token.epoch }];
  });
  try {
    const still = await o.leases.renew(o.replicaId, s.ttlMs, holding);
    s.lastRenewed = sentAt;
    const kept = new Map(still.map((f) => [f.familyId, f.epoch]));
    for (const familyId of o.fence.held()) {
      if ((s.takenAt.get(familyId) ?? 0) > sentAt) continue; // taken after the query was sent
      if (kept.get(familyId) !== o.fence.tokenOfFamily(familyId)?.epoch) o.fence.lost([familyId]);
    }
    await checkWatched(s);
  } catch (error) {
    o.onError?.(error);
    // No renewal for a whole lease: whatever the database says, the others may have taken them.
    if (performance.now() - s.lastRenewed > s.ttlMs) o.fence.lost(o.fence.held());
  }
}

export function createOwnership(o: OwnershipOptions): Ownership {
  const s: OwnershipState = {
    o,
    ttlMs: o.ttlMs ?? LEASE_TTL_MS,
    families: createFamilies(o.agents),
    taking: new Map(),
    takenAt: new Map(),
    targets: new Map(),
    watched: new Map(),
    takeoverHooks: [],
    tenantOf: new Map(),
    lastRenewed: performance.now(),
    confirming: undefined,
    timer: undefined,
    closed: false,
  };
  // Registered first, so the hooks added later still find the family's tenant; dropped after them.
  // An append (a call's `tool.call` first) is refused while a hold is not confirmed within 90% of a
  // lease (the database may have let another replica take it), and a renewal is asked for at once.
  o.fence.freshness((familyId) => {
    if (confirmedLately(s, familyId, 0.9)) return true;
    void confirmed(s);
    return false;
  });
  o.fence.onLost((familyId) => {
    s.takenAt.delete(familyId);
    s.targets.delete(familyId);
    queueMicrotask(() => {
      if (!o.fence.holds(familyId)) s.tenantOf.delete(familyId);
    });
  });
  const familyOf = async (tenantId: string, agentId: string) => s.families.of(tenantId, agentId);
  return {
    replicaId: o.replicaId,
    async route(tenantId, agentId, options = {}) {
      const familyId = await familyOf(tenantId, agentId);
      // Unknown here: the local routes answer (NOT_FOUND, or whatever the agent's absence means).
      if (familyId === undefined) return LOCAL;
      return routeFamily(s, tenantId, agentId, familyId, options.forwarded === true);
    },
    async claim(tenantId, agentId) {
      const familyId = await familyOf(tenantId, agentId);
      if (familyId === undefined) return true; // gone: the caller's own check removes it
      if (await holdsNow(s, familyId)) return true;
      s.targets.delete(familyId);
      return (await routeFamily(s, tenantId, agentId, familyId, false)).kind === 'local';
    },
    unreachable(_tenantId, agentId) {
      const familyId = s.families.known(agentId);
      if (familyId !== undefined) s.targets.delete(familyId);
    },
    created(record) {
      const parentId = record.links?.parentId;
      const familyId = parentId === undefined ? record.id : (s.families.known(parentId) ?? parentId);
      s.families.note(record.tenantId, record.id, familyId);
      if (o.fence.holds(familyId)) o.fence.bind(record.id, familyId);
    },
    async deleted(tenantId, agentId) {
      if (!o.fence.holds(agentId) || s.tenantOf.get(agentId) !== tenantId) return;
      o.fence.forget(agentId);
      s.tenantOf.delete(agentId);
      s.takenAt.delete(agentId);
      await o.leases.drop(agentId, o.replicaId);
    },
    onTakeover(hook) {
      s.takeoverHooks.push(hook);
    },
    onLost(hook) {
      o.fence.onLost((familyId, agentIds) => {
        const tenantId = s.tenantOf.get(familyId);
        if (tenantId !== undefined) hook({ familyId, tenantId, agentIds });
      });
    },
    held: () => o.fence.held(),
    async start(url) {
      await o.leases.register({ id: o.replicaId, url }, o.replicaOf);
      s.lastRenewed = performance.now();
      s.timer = setInterval(() => void renew(s), o.renewMs ?? LEASE_RENEW_MS);
      s.timer.unref();
    },
    async close() {
      if (s.closed) return;
      s.closed = true;
      clearInterval(s.timer);
      for (const { controller } of s.watched.values()) controller.abort();
      s.watched.clear();
      await o.leases.retire(o.replicaId);
    },
  };
}
