// The wake-up bus: the store's port for the rare events another process sharing the database must
// hear at once (issue 31): a host request settled, a mailbox post, a key revoked, an agent deleted,
// a tenant's configuration changed. Never one per log event. A wake-up carries a topic and an id
// only; what it means is re-read from the store, so a lost, late or repeated wake-up costs a read,
// never a wrong answer.
// Backends: libsql and memory keep it in-process (createLocalWakeBus below: synchronous fan-out,
// nothing else); PostgreSQL adds LISTEN/NOTIFY between processes (pg/notify.ts).
// Invariants: publish() delivers to this process's subscribers synchronously, before it returns
// its promise, and to every other process's once each while their bus listens; it never rejects
// (a failed send is told to onError: the write it announces stands, the backstops below cover it).
// A subscriber that throws is told to onError and the others still hear the wake-up. Every
// subscriber is idempotent: its own process may have done the work already (the publisher
// usually wakes its local waiters itself before it publishes). After a lost connection the
// resync listeners run (onResync): each re-reads or drops what it may have missed meanwhile.
// Subscribers that keep something for a while (a cache with a TTL, a poll) keep that as the
// backstop for when the bus does not reach other processes (`listening()` false).

/** What a wake-up is about; its id names the thing (see each member). */
export type WakeTopic =
  /** A host request left `pending` (answered, cancelled, expired): the request's id. */
  | 'request'
  /** A mailbox got an item: the recipient agent's id. */
  | 'mail'
  /** An API key was revoked: the key's id. */
  | 'key'
  /** An agent was deleted: the agent's id. */
  | 'agent'
  /** A tenant's configuration changed (egress settings, skill catalog): the tenant's id. */
  | 'config';

export const WAKE_TOPICS: readonly WakeTopic[] = ['request', 'mail', 'key', 'agent', 'config'];

export interface WakeBus {
  /**
   * Whom a wake-up reaches: `process` (libsql, memory: this process only; another process on the
   * same file sees changes through its backstops) or `database` (PostgreSQL: every process whose
   * bus is listening).
   */
  readonly reach: 'process' | 'database';
  /** Whether wake-ups from other processes arrive now (`process`: always false). */
  listening(): boolean;
  /** Tells every subscriber of `topic`, here at once and elsewhere as soon as the database delivers. */
  publish(topic: WakeTopic, id: string): Promise<void>;
  /** Called with the id of every wake-up of `topic`. Returns an unsubscribe. */
  subscribe(topic: WakeTopic, listener: (id: string) => void): () => void;
  /** Called after wake-ups may have been missed (the LISTEN connection was lost and is back). */
  onResync(listener: () => void): () => void;
  /** Stops listening. Idempotent. */
  close(): Promise<void>;
}

/** The subscribers of one process, and their fan-out (every bus delivers through one). */
export interface WakeFanOut {
  subscribe: WakeBus['subscribe'];
  onResync: WakeBus['onResync'];
  deliver(topic: WakeTopic, id: string): void;
  resync(): void;
}

export const createWakeFanOut = (onError: (error: unknown) => void = () => undefined): WakeFanOut => {
  const listeners = new Map<WakeTopic, Set<(id: string) => void>>();
  const resyncs = new Set<() => void>();
  const each = <A extends unknown[]>(set: Iterable<(...args: A) => void>, ...args: A): void => {
    // A copy: a listener may unsubscribe (itself or another) while it is told.
    for (const listener of [...set]) {
      try {
        listener(...args);
      } catch (error) {
        onError(error);
      }
    }
  };
  return {
    subscribe(topic, listener) {
      const set = listeners.get(topic) ?? new Set();
      listeners.set(topic, set);
      const own = (id: string) => listener(id); // the same function subscribed twice counts twice
      set.add(own);
      return () => void set.delete(own);
    },
    onResync(listener) {
      const own = () => listener();
      resyncs.add(own);
      return () => void resyncs.delete(own);
    },
    deliver: (topic, id) => each(listeners.get(topic) ?? [], id),
    resync: () => each(resyncs),
  };
};

/** The in-process bus of libsql and memory stores: synchronous fan-out, no I/O. */
export const createLocalWakeBus = (onError?: (error: unknown) => void): WakeBus => {
  const fanOut = createWakeFanOut(onError);
  return {
    reach: 'process',
    listening: () => false,
    async publish(topic, id) {
      fanOut.deliver(topic, id);
    },
    subscribe: fanOut.subscribe,
    onResync: fanOut.onResync,
    close: async () => undefined,
  };
};
