// What one event log holds between calls, in one object that the core's parts (append, budget,
// queue, read) take as their first argument, as host/isolates' HostState is: the backend and the
// options, the per-session and per-tenant caches, the queue and the rows in flight, the counts
// flush() waits on, the pending background write and the subscribers, and what an asynchronous
// backend makes wait: the answers of the running operation and the appends still loading.
// Invariants: a session's tenant is read once (its first use) and never changes for this log; a
// session's `seq` is the last seq given or stored, -1 until loaded; `queue` and `inFlight` hold
// rows in append order, `inFlight` older than `queue`; a session with an entry in `chains` has an
// append still loading, and every later append of that session waits behind it; a payload is in
// `queuedBlobs` exactly while a row that stores it is queued or in flight; `appended - stored`
// rows are queued or in flight.
import { type Answering, answer } from './event-log-load.ts';
import type { AsyncEventWriter, EventBackend, EventLogOptions, QueuedRow } from './event-log-port.ts';
import type { SessionEvent } from './types.ts';

/** A tenant's log budget as this process counts it (event-log-budget.ts says the rules). */
export interface Budget {
  tenantId: string;
  /** Log bytes stored plus queued: loaded from the backend on the tenant's first append. */
  used: number;
  /** Log bytes it may hold: its `logBytes` quota, else the service's budget. */
  max: number;
  /** When `max` was read from the store (now()): read again past BUDGET_REFRESH_MS. */
  readAt: number;
  dropped: number;
  refused: number;
}

/** What appending to a session needs, kept per session. */
export interface SessionState {
  tenantId: string;
  /** Its tenant's, once the session appended. */
  budget: Budget | undefined;
  /** The last seq given (or stored, once the backend renumbered); -1 until read at its first append. */
  seq: number;
}

export interface LogState extends Answering {
  backend: EventBackend;
  options: EventLogOptions;
  now: () => number;
  batchWindowMs: number;
  batchIntervalMs: number;
  /** When the last write began (performance.now()): the next waits for batchIntervalMs after it. */
  lastWriteAt: number;
  /** Log bytes a tenant without a `logBytes` quota may hold. */
  budget: number;
  inlineBytes: number;
  /** Per session: its tenant, its budget and its last seq, loaded as first needed. */
  sessions: Map<string, SessionState>;
  /** Per tenant that appended since open: log bytes stored plus queued, and what was dropped or refused. */
  budgets: Map<string, Budget>;
  /** Payloads queued but not yet written, by `${tenant}\0${sha256}`. */
  queuedBlobs: Map<string, string>;
  listeners: Map<string, Set<(event: SessionEvent) => void>>;
  queue: QueuedRow[];
  /** Rows the writer thread has and has not answered for yet (readers still see them). */
  inFlight: QueuedRow[];
  /** The writer thread while it works; undefined writes on the caller's thread. */
  writer: AsyncEventWriter | undefined;
  /** The writer thread given at open, closed with the log (even after `writer` gave up on it). */
  threadWriter: AsyncEventWriter | undefined;
  /** Rows appended and rows known stored, since open: flush() waits for the first to reach the second. */
  appended: number;
  stored: number;
  answerWaiters: Set<{ resolve: () => void; reject: (error: unknown) => void }>;
  /** Rows whose storing someone waits for (EventLog.stored): settled when stored or dropped. */
  storedWaits: Map<QueuedRow, { resolve: () => void; reject: (error: unknown) => void }>;
  /** The pending background write (one of the two, or neither). */
  immediate: NodeJS.Immediate | undefined;
  timeout: NodeJS.Timeout | undefined;
  /** Failed writes in a row: the retry backs off with them. */
  failures: number;
  closed: boolean;
  /** What close() answers: settled once everything appended before it is stored (or failed). */
  closing: Promise<void> | undefined;
  /** Per session, its last append still loading (asynchronous backends only): later ones chain after it. */
  chains: Map<string, Promise<unknown>>;
}

export function sessionOf(s: LogState, sessionId: string): SessionState {
  let session = s.sessions.get(sessionId);
  if (session === undefined) {
    const tenantId =
      s.options.tenantOf?.(sessionId) ??
      answer(s, `tenant\0${sessionId}`, () => s.backend.tenantOf(sessionId));
    session = { tenantId, budget: undefined, seq: -1 };
    s.sessions.set(sessionId, session);
  }
  return session;
}

export function blobKey(tenant: string, sha256: string): string {
  return `${tenant}\0${sha256}`;
}

/** A payload's text: queued ones from the queue, the others from the backend. */
export function readBlob(s: LogState, tenant: string, sha256: string): string | undefined {
  const key = blobKey(tenant, sha256);
  return s.queuedBlobs.get(key) ?? answer(s, `blob\0${key}`, () => s.backend.readBlob(tenant, sha256));
}
