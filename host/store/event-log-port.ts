// The event log's ports: what a backend stores rows with (EventBackend), the writer thread a
// backend may add (AsyncEventWriter), the rows that travel through both, and the options of the
// shared core (event-log-core.ts). Types only: the behaviour every backend shares is the core's.
// A backend may answer now or with a promise (issue 30); event-log-load.ts is how the core takes
// either without an await on the synchronous path.
import type { PayloadBlob } from './payloads.ts';
import type { EventLog, EventPayloads, EventRepairs, EventSurface } from './types.ts';

/** An event as stored: data already serialized (markers in place of payloads), so later mutation cannot change it. */
export interface EventRow {
  sessionId: string;
  seq: number;
  type: string;
  surface: EventSurface;
  callId: string | undefined;
  parentCallId: string | undefined;
  data: string;
  /** JSON array of PayloadRef, children first; undefined when nothing moved. */
  refs: string | undefined;
  at: number;
}

/** A row on its way to the backend, with what its write must also do. */
export interface QueuedRow extends EventRow {
  tenantId: string;
  /** What the row adds to its tenant's usage (payloads included). */
  bytes: number;
  /** Payloads this row stores first (not yet stored for the tenant). */
  blobs: readonly PayloadBlob[];
  /** With a fence (replicas): the family and epoch it was appended in, or 'lost'; unset when not fenced. */
  fence?: FenceToken | 'lost';
}

/** A family held in one epoch: what an owner's writes are fenced by. */
export interface FenceToken {
  familyId: string;
  epoch: number;
}

/**
 * Which sessions' events this process may still write, when several replicas share one database
 * (host/replicas/fence.ts). A session of a family the process holds writes in that family's epoch;
 * one of a family it lost writes nothing; one it never held is not fenced. The backend checks the
 * tokens in the write's own transaction (pg/leases.ts heldFamilies), so an owner that was paused
 * past its lease writes nothing even before it learns it lost the family.
 */
export interface EventFence {
  readonly replicaId: string;
  /** The session's token now: synchronous, asked once per appended row. */
  tokenOf(sessionId: string): FenceToken | 'lost' | undefined;
  /** Told which families' rows were dropped or refused: their owner moved, their work must stop here. */
  lost(familyIds: readonly string[]): void;
  /**
   * Whether an append to the session is admitted now: false for a session of a family this process
   * lost, or whose hold it has not had confirmed within its lease (appends are then refused with
   * OWNER_FENCED). Absent: every append is admitted.
   */
  admits?(sessionId: string): boolean;
}

/** A backend's answer: now (libsql, memory) or later (a network database). */
export type Answer<T> = T | Promise<T>;

/**
 * Where rows go. A backend answers synchronously (libsql, memory: SyncEventBackend) or with
 * promises (a network database); the core (event-log-core.ts) takes the synchronous path whenever
 * the answer is already there, so a synchronous backend costs no await. `write` is atomic (all
 * rows, their payloads, the usage they add and the open calls they open or close, or nothing), one
 * write in flight at a time, and may raise the seqs of a session's rows (keeping their order, in
 * place) when another writer got there first.
 */
export interface EventBackend {
  /** The highest seq stored for the session, 0 when none. Called once per session. */
  lastSeq(sessionId: string): Answer<number>;
  /** The tenant whose budget the session's events count against ('' when none is known). */
  tenantOf(sessionId: string): Answer<string>;
  /** Stored log bytes of a tenant. Called once per tenant. */
  usage(tenantId: string): Answer<number>;
  /** Stored log bytes of every tenant. */
  usageAll(): Answer<{ tenantId: string; bytes: number }[]>;
  /**
   * The tenant's own log budget (its `logBytes` quota in `tenants.quotas`), undefined when it has
   * none (then `budgetBytes` holds). Read on the tenant's first append and again when stale. Absent: none.
   */
  quotaOf?(tenantId: string): Answer<number | undefined>;
  readBlob(tenantId: string, sha256: string): Answer<string | undefined>;
  hasBlob(tenantId: string, sha256: string): Answer<boolean>;
  write(rows: QueuedRow[]): Answer<void>;
  read(sessionId: string, afterSeq: number, limit: number): Answer<EventRow[]>;
  /**
   * The `tool.call` and `tool.result` rows of every session with open calls (its stored calls
   * outnumber its results: `sessions.open_calls` > 0, kept by `write`), of `sessionIds` only when
   * given; by session, then seq. Reads only those sessions' rows, never the whole log.
   */
  callRows(sessionIds: readonly string[] | undefined): Answer<EventRow[]>;
  /** Where the session's kept log starts: 1 until retention removed a prefix (log-retention-port.ts). Absent: 1. */
  firstSeq?(sessionId: string): Answer<number>;
}

/** A backend that answers at once (libsql, memory; the writer thread calls its `write` directly). */
export interface SyncEventBackend extends EventBackend {
  lastSeq(sessionId: string): number;
  tenantOf(sessionId: string): string;
  usage(tenantId: string): number;
  usageAll(): { tenantId: string; bytes: number }[];
  quotaOf?(tenantId: string): number | undefined;
  readBlob(tenantId: string, sha256: string): string | undefined;
  hasBlob(tenantId: string, sha256: string): boolean;
  write(rows: QueuedRow[]): void;
  read(sessionId: string, afterSeq: number, limit: number): EventRow[];
  callRows(sessionIds: readonly string[] | undefined): EventRow[];
  firstSeq?(sessionId: string): number;
}

/**
 * The stores' group-commit interval (EventLogOptions.batchIntervalMs): under a stream of calls a
 * store writes about one transaction per 10 ms instead of one per 2 ms window. 20 sequential reads
 * in one program, alternated 0 / 10 / 20 ms: the writer thread's CPU 4.1-5.2 / 3.0-3.3 / 2.3-2.7 ms
 * and the service's main thread 8.3-9.7 / 7.6-8.1 / 7.4-8.1 ms a program; subscribers see events
 * of a busy session at most this much later.
 */
export const EVENT_BATCH_INTERVAL_MS = 10;

/**
 * Rows the writer thread puts in one transaction (event-writer-thread.ts): a writer on the main
 * connection (an agent's row, a request) waits for the database lock at most as long as one takes,
 * not a whole 1,000-call batch. A queue that fills one does not wait for the batch interval.
 */
export const TRANSACTION_ROWS = 256;

export interface EventLogOptions {
  /** Clock for `at`. Default Date.now. */
  now?: () => number;
  /** Told about background write failures (the rows stay queued and are retried). */
  onError?: (error: unknown) => void;
  /** Replicas: the fence every row is appended under (see EventFence). Unset: nothing is fenced. */
  fence?: EventFence;
  /**
   * How long appends may wait to be written together. 0 (the default) writes at the next
   * setImmediate; a few ms coalesces calls that arrive in different ticks into one transaction.
   * flush() and close() always write at once.
   */
  batchWindowMs?: number;
  /**
   * Group commit under load: while appends keep coming, the least time from one write's start to
   * the next. An append after a quiet spell is written after `batchWindowMs` as before; one that
   * arrives sooner after the last write waits until this much time has passed since that write
   * began, so a busy log writes one transaction per interval instead of one per window. 0 (the
   * default): no spacing. flush() and close() always write at once.
   */
  batchIntervalMs?: number;
  /** Log bytes each tenant may hold (events plus payloads). Default DEFAULT_LOG_BUDGET_BYTES (512 MiB). */
  budgetBytes?: number;
  /** Values of event data longer than this (JSON characters) are stored once, apart. Default 16 KiB. */
  inlineBytes?: number;
  /** Overrides the backend's session → tenant mapping (tests, stores without agents). */
  tenantOf?: (sessionId: string) => string;
}

/**
 * Writes rows off the caller's thread (event-writer.ts), one write at a time, in order. The core
 * falls back to `backend.write` once a write comes back `lost`.
 */
export interface AsyncEventWriter {
  /**
   * `done` is called once: how many rows (from the first) are stored, their seqs when the backend
   * renumbered them (undefined: as given), the error that stopped the rest, and `lost` when the
   * thread ended (whether the rest was stored is unknown).
   */
  write(
    rows: QueuedRow[],
    done: (result: { stored: number; seqs?: number[]; error?: unknown; lost?: boolean }) => void,
  ): void;
  /** Blocks the calling thread until the write in flight (if any) has called its `done`. */
  waitSync(): void;
  /** Ends the thread (after waitSync). */
  close(): void;
}

export interface ClosableEventLog extends EventLog, EventPayloads, EventRepairs {
  /**
   * Forgets what this process knows of the session's seqs, so its next append reads the stored
   * last seq again: a replica taking a family over calls it, another replica having written since.
   */
  forget(sessionId: string): void;
  /**
   * Takes `bytes` off what this process counts as the tenant's log usage: retention removed them
   * (host/tenants/retention.ts), so appends refused for the budget are admitted again at once.
   */
  release(tenantId: string, bytes: number): void;
  /**
   * The tenant's log budget is now `bytes` (its `logBytes` quota; undefined: the service's), at once
   * in this process: the operator set it here (host/store/tenant-quota-watch.ts).
   */
  setBudget(tenantId: string, bytes: number | undefined): void;
  /**
   * Refuses appends from now on, writes what is queued and stops the background writer. Resolves
   * once everything appended before it is stored: with a synchronous backend (libsql, memory)
   * before it returns (a failed write throws from the call), with an asynchronous one once the
   * write in flight and the rest behind it answered (rejects when one fails). Await it before
   * closing the database an asynchronous backend writes to.
   */
  close(): Promise<void>;
}
