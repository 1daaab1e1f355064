// The number of live replicas a per-tenant limit is shared over, read from the store's heartbeats
// (LimitStore.liveReplicas) and cached: a limit counted in each replica admits ceil(limit / live)
// there, so with N live replicas a tenant holds at most N * ceil(limit / N) <= limit + N - 1 at
// once. Read at most every `refreshMs` and never on a request's path once the first read is in
// (later reads run in the background); a replica that joins or dies is counted within refreshMs
// (this one too: it registers after its limits are made, so its first few seconds may count
// one replica fewer and admit a little more).
// Invariants: the count is at least 1; a failed read keeps the last count (and is read again
// on the next use); one read in flight at a time.
import type { LimitStore } from './limits-port.ts';

export interface ReplicaShare {
  /** The live replicas as last read (1 until the first read, started at creation, is in). */
  count(): number;
  /** Reads again when the count is stale; settles when that read is in (at once when fresh). */
  refresh(): Promise<void>;
  /** Settles when the first read, started at creation, is in. */
  ready: Promise<void>;
  /** `limit` shared over the live replicas: this replica's part of it (at least 1). */
  of(limit: number): number;
}

export interface ReplicaShareOptions {
  limits: Pick<LimitStore, 'liveReplicas'>;
  /** A replica is live when its heartbeat is this recent (DSH_REPLICA_LEASE_MS). */
  liveWithinMs: number;
  /** How often the live replicas are counted again. Default 5 s. */
  refreshMs?: number;
  now?: () => number;
}

export function createReplicaShare(options: ReplicaShareOptions): ReplicaShare {
  const now = options.now ?? Date.now;
  const refreshMs = options.refreshMs ?? 5_000;
  let count = 1;
  let readAt = Number.NEGATIVE_INFINITY;
  let reading: Promise<void> | undefined;

  function refresh(): Promise<void> {
    if (now() - readAt < refreshMs) return Promise.resolve();
    reading ??= options.limits
      .liveReplicas(options.liveWithinMs)
      .then(
        (n) => {
          count = Math.max(1, n);
          readAt = now();
        },
        () => undefined, // the last count stands; the next use reads again
      )
      .finally(() => {
        reading = undefined;
      });
    return reading;
  }

  // The first read starts at once, so requests of the first moments are shared too.
  const ready = refresh();
  return {
    count: () => count,
    refresh,
    ready,
    of(limit) {
      void refresh();
      return Math.max(1, Math.ceil(limit / count));
    },
  };
}

const shares = new WeakMap<LimitStore, ReplicaShare>();

/**
 * The one share of a store's replicas that every per-replica limit of this process reads (egress
 * connections, request concurrency, plugin caps): one count, one read every 5 s. Undefined when
 * the store keeps no central limits (libsql: one process, every limit whole).
 */
export function replicaShareOf(
  store: { limits?: LimitStore | undefined },
  liveWithinMs: number,
): ReplicaShare | undefined {
  const limits = store.limits;
  if (limits === undefined) return undefined;
  let share = shares.get(limits);
  if (share === undefined) {
    share = createReplicaShare({ limits, liveWithinMs });
    shares.set(limits, share);
  }
  return share;
}
