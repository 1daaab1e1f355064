// The libsql EventLog: the shared batching core (event-log-core.ts) over the `events` and
// `sessions` tables. This module wires the parts: event-log-libsql-write.ts writes a batch (one
// transaction, sessions, payloads, usage, index); event-log-libsql-read.ts holds the reads.
// Invariants: one BEGIN IMMEDIATE transaction per batch; a session row exists
// (and its last_seq is raised, its open_calls moved by the batch's calls minus its results) before
// its events are inserted; a session's last seq is loaded
// once from max(sessions.last_seq, max(events.seq)), so a reopened log continues without gaps.
// Sessions have one writing process by design; if a second one wrote the session meanwhile, the
// insert hits the primary key and the batch is retried once, renumbered after the stored rows, so
// stored seqs stay unique and gap-free (readers and subscribers see the stored seq; append's
// return value was a guess). The common path reads nothing: a read costs as much as two inserts.
// Payloads live in `payloads` (one row per tenant and sha256, INSERT OR IGNORE), and the same
// transaction adds what the batch really stored to `tenant_log_usage`; a session's tenant is its
// agent's. The same transaction indexes every row for full-text search (search-text.ts): an
// `event_index` entry and its tokens in `events_fts`, the payloads the row newly stored included.
import type { Database } from './db.ts';
import { createEventLog } from './event-log-core.ts';
import {
  callRowsOf,
  firstSeqOf,
  hasBlob,
  lastSeqOf,
  logQuotaReader,
  prepareReads,
  readBlob,
  readEvents,
  tenantOfSession,
  usageOf,
  usageOfAll,
} from './event-log-libsql-read.ts';
import { prepareWrites, writeEvents } from './event-log-libsql-write.ts';
import type { ClosableEventLog, EventLogOptions, SyncEventBackend } from './event-log-port.ts';
import { createEventWriter } from './event-writer.ts';

export interface LibsqlEventBackendOptions {
  /** Index every event for full-text search. Default true; false only to measure what it costs. */
  index?: boolean;
}

export interface LibsqlEventLogOptions extends EventLogOptions, LibsqlEventBackendOptions {
  /**
   * The database file, to write events on a thread of their own with a second connection to it
   * (event-writer.ts). Default: none, events are written on the caller's connection and thread.
   */
  writerPath?: string;
  busyTimeoutMs?: number;
}

export const createLibsqlEventBackend = (
  db: Database,
  options: LibsqlEventBackendOptions = {},
): SyncEventBackend => {
  const reads = prepareReads(db);
  const writes = prepareWrites(db, options.index ?? true);
  const quotaOf = logQuotaReader(db);
  return {
    lastSeq: (sessionId) => lastSeqOf(reads, sessionId),
    tenantOf: (sessionId) => tenantOfSession(reads, sessionId),
    usage: (tenantId) => usageOf(reads, tenantId),
    usageAll: () => usageOfAll(reads),
    quotaOf,
    readBlob: (tenantId, sha256) => readBlob(reads, tenantId, sha256),
    hasBlob: (tenantId, sha256) => hasBlob(reads, tenantId, sha256),
    write: (rows) => writeEvents(writes, rows),
    read: (sessionId, afterSeq, limit) => readEvents(reads, sessionId, afterSeq, limit),
    callRows: (sessionIds) => callRowsOf(reads, sessionIds),
    firstSeq: (sessionId) => firstSeqOf(reads, sessionId),
  };
};

/** An EventLog persisted in the store database. Call `close()` before closing the database. */
export const createLibsqlEventLog = (db: Database, options: LibsqlEventLogOptions = {}): ClosableEventLog =>
  createEventLog(
    createLibsqlEventBackend(db, options),
    options,
    options.writerPath === undefined
      ? undefined
      : createEventWriter({
          path: options.writerPath,
          ...(options.index === undefined ? {} : { index: options.index }),
          ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }),
        }),
  );
