// The wake-up bus on PostgreSQL (../wake-port.ts): LISTEN/NOTIFY between the processes (replicas)
// sharing one database. One connection per process listens, made with the pool's own settings (URL,
// TLS; its application_name + " wake-ups") but outside it, so it takes none of the pool's slots and
// the pool's end() does not wait for it, on one channel per topic (`dsh_wake_<topic>`); a wake-up is
// `SELECT pg_notify(channel, '<origin>:<id>')`: inside the write's own transaction where the port
// that writes announces it (a mailbox post: `within`, delivered with the COMMIT, never after a
// ROLLBACK), else on the pool right after the write (publish: a process that dies between its
// commit and the NOTIFY loses that one wake-up, which the subscribers' backstops cover).
// Invariants: this process's subscribers hear a publish synchronously (the fan-out), and never
// again from the database: `origin` is this bus's random tag, and its own notifications are
// skipped, so each process hears each wake-up once. When the listening connection dies (the
// server restarted, the backend was terminated, the network failed, or a heartbeat went
// unanswered: a socket can look open and hear nothing) the bus says so at once
// (listening() false: the subscribers' backstops take over), reconnects with backoff, LISTENs
// again, and only then runs the resync listeners, so whatever they re-read is read after the
// LISTEN is back and nothing falls between the two. A failure is told to onError, never thrown
// into the event loop (an unheard 'error' of a connection out of the pool ends the process).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { SandboxError } from '../../errors.ts';
import { createWakeFanOut, WAKE_TOPICS, type WakeBus, type WakeTopic } from '../wake-port.ts';
import { type PgDatabase, type PgQueries, pgStoreError } from './db.ts';

/** The channel of a topic. */
const channelOf = (topic: WakeTopic): string => `dsh_wake_${topic}`;
const TOPIC_OF = new Map(WAKE_TOPICS.map((topic) => [channelOf(topic), topic]));
/** A NOTIFY payload must stay under 8000 bytes; ids are a few dozen. */
const MAX_ID_BYTES = 7000;

/**
 * The PostgreSQL bus, with the two halves of a publish apart for a write that is a transaction:
 * `within` sends the NOTIFY on the transaction's connection (PostgreSQL delivers it with COMMIT,
 * and never after a ROLLBACK), `here` tells this process's subscribers once it committed.
 */
export interface PgWakeBus extends WakeBus {
  within(q: PgQueries, topic: WakeTopic, id: string): Promise<void>;
  here(topic: WakeTopic, id: string): void;
}

export interface PgWakeBusOptions {
  /** Told about a lost listening connection, a failed reconnect or send, a subscriber that threw. */
  onError?: (error: SandboxError | unknown) => void;
  /** First wait before reconnecting, doubled per failure up to maxBackoffMs. Default 100 ms. */
  backoffMs?: number;
  /** Default 5000 ms. */
  maxBackoffMs?: number;
  /**
   * How often the listening connection is asked `SELECT 1`, and how long it may take to answer
   * before it counts as lost (a server that hangs, or a network that drops packets without a
   * reset, leaves a socket that looks open and hears nothing). Default 10000 and 5000 ms.
   */
  heartbeatMs?: number;
  heartbeatTimeoutMs?: number;
}

/**
 * The pool's own client settings (pg-pool hands them to each new Client; copied with their
 * descriptors, as the password and a TLS key are kept unenumerable there), named apart so an
 * operator tells the listener from the pool's connections in pg_stat_activity.
 */
function listenerConfig(db: PgDatabase): pg.ClientConfig {
  const config = Object.defineProperties(
    {},
    Object.getOwnPropertyDescriptors(db.pool.options),
  ) as pg.ClientConfig;
  config.application_name = `${config.application_name ?? 'dsh-sandbox'} wake-ups`;
  return config;
}

/** A listening connection while it is up. */
interface Listening {
  client: pg.Client;
  /** Ends it (idempotent). */
  drop: () => Promise<void>;
  /** Counts it as lost: dropped, and replaced. */
  lost: (cause: unknown) => void;
  /** A heartbeat is in flight. */
  probing: boolean;
}

/** The notification handler: this bus's own wake-ups (its origin) are skipped, it heard them at publish. */
const receiver =
  (origin: string, deliver: (topic: WakeTopic, id: string) => void) =>
  (message: pg.Notification): void => {
    const topic = TOPIC_OF.get(message.channel);
    const payload = message.payload ?? '';
    const colon = payload.indexOf(':');
    if (topic === undefined || colon < 0 || payload.slice(0, colon) === origin) return;
    deliver(topic, payload.slice(colon + 1));
  };

/** Sends the NOTIFY on `q` (the pool, or a transaction: then it is delivered with its COMMIT). */
async function notify(
  q: PgQueries,
  origin: string,
  topic: WakeTopic,
  id: string,
  onError: (error: unknown) => void,
): Promise<void> {
  const bytes = Buffer.byteLength(id);
  // Never an id of ours; told, and the write goes on without its wake-up (the backstops cover it).
  if (bytes > MAX_ID_BYTES)
    return onError(pgStoreError(`announce ${topic} (an id of ${bytes} bytes)`, 'id too long'));
  await q.query('SELECT pg_notify($1, $2)', [channelOf(topic), `${origin}:${id}`]);
}

/** Asks the listening connection for an answer; one that does not come in time is lost. */
function probe(up: Listening | undefined, timeoutMs: number): void {
  if (up === undefined || up.probing) return;
  up.probing = true;
  const late = setTimeout(() => up.lost(`no answer to a heartbeat in ${timeoutMs} ms`), timeoutMs);
  up.client.query('SELECT 1').then(
    () => {
      clearTimeout(late);
      up.probing = false;
    },
    (error: unknown) => {
      clearTimeout(late);
      up.lost(error);
    },
  );
}

/** A started bus: resolves once the first LISTEN is up (STORE_FAILED when it cannot be). */
export const startPgWakeBus = async (db: PgDatabase, options: PgWakeBusOptions = {}): Promise<PgWakeBus> => {
  const onError = options.onError ?? (() => undefined);
  const fanOut = createWakeFanOut(onError);
  const origin = randomBytes(6).toString('base64url');
  const backoffMs = options.backoffMs ?? 100;
  const maxBackoffMs = options.maxBackoffMs ?? 5000;
  const heartbeatMs = options.heartbeatMs ?? 10_000;
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? 5000;
  /** The listening connection while it is up. */
  let current: Listening | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let failures = 0;

  const onNotification = receiver(origin, fanOut.deliver);

  /** Connects and LISTENs on every channel; the connection's death schedules the next try. */
  const listen = async (): Promise<void> => {
    const next = new pg.Client(listenerConfig(db));
    let ended: Promise<void> | undefined;
    /** Ends the connection once, whoever notices first (its death, a failed LISTEN, close). */
    const drop = (): Promise<void> => {
      if (ended !== undefined) return ended;
      if (current?.client === next) current = undefined;
      next.removeListener('notification', onNotification);
      ended = next.end().catch(() => undefined); // already dead, or ending: nothing more to hear from it
      return ended;
    };
    const onLost = (cause?: unknown): void => {
      const wasUp = current?.client === next;
      void drop();
      // Lost before it listened: listen() rejects, and its caller retries (or fails the start).
      if (closed || !wasUp) return;
      onError(pgStoreError('listen for wake-ups (its connection ended; reconnecting)', cause ?? 'ended'));
      reconnect();
    };
    next.on('error', onLost);
    next.on('end', () => onLost());
    next.on('notification', onNotification);
    try {
      await next.connect();
      await next.query(WAKE_TOPICS.map((topic) => `LISTEN ${channelOf(topic)}`).join('; '));
    } catch (error) {
      await drop();
      throw pgStoreError('listen for wake-ups', error);
    }
    if (ended !== undefined) throw pgStoreError('listen for wake-ups', 'its connection ended');
    if (closed) return drop();
    current = { client: next, drop, lost: onLost, probing: false };
  };

  const reconnect = (): void => {
    if (closed || retry !== undefined) return;
    const wait = Math.min(maxBackoffMs, backoffMs * 2 ** failures);
    retry = setTimeout(() => {
      retry = undefined;
      listen().then(
        () => {
          failures = 0;
          // Only now: what the resync re-reads is read while wake-ups arrive again.
          if (!closed) fanOut.resync();
        },
        (error: unknown) => {
          failures++;
          onError(error);
          reconnect();
        },
      );
    }, wait);
    retry.unref();
  };

  await listen();
  const heartbeat = setInterval(() => probe(current, heartbeatTimeoutMs), heartbeatMs).unref();

  return {
    reach: 'database',
    listening: () => current !== undefined,
    async publish(topic, id) {
      fanOut.deliver(topic, id);
      try {
        await notify(db, origin, topic, id, onError);
      } catch (error) {
        onError(error);
      }
    },
    within: (q, topic, id) => notify(q, origin, topic, id, onError),
    here: fanOut.deliver,
    subscribe: fanOut.subscribe,
    onResync: fanOut.onResync,
    async close() {
      closed = true;
      clearInterval(heartbeat);
      clearTimeout(retry);
      retry = undefined;
      await current?.drop();
    },
  };
};
