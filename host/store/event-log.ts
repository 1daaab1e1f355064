// The libsql EventLog: the shared batching core (event-log-core.ts) over the `events` and
// `sessions` tables. Invariants: one BEGIN IMMEDIATE transaction per batch; a session row exists
// (and its last_seq is raised) before its events are inserted; a session's last seq is loaded
// once from max(sessions.last_seq, max(events.seq)), so a reopened log continues without gaps.
// Sessions have one writing process by design; if a second one wrote the session meanwhile, the
// insert hits the primary key and the batch is retried once, renumbered after the stored rows, so
// stored seqs stay unique and gap-free (readers and subscribers see the stored seq; append's
// return value was a guess). The common path reads nothing: a read costs as much as two inserts.
// Payloads live in `payloads` (one row per tenant and sha256, INSERT OR IGNORE), and the same
// transaction adds what the batch really stored to `tenant_log_usage`; a session's tenant is its
// agent's. The same transaction indexes every row for full-text search (search-text.ts): an
// `event_index` entry and its tokens in `events_fts`, the payloads the row newly stored included.
import { type Database, guarded, immediate } from './db.ts';

import { createEventLog } from './event-log-core.ts';
import type { ClosableEventLog, EventBackend, EventLogOptions, QueuedRow } from './event-log-port.ts';
import { createEventWriter } from './event-writer.ts';
import { INDEX_PAYLOAD_MAX, indexText, ownerTokens } from './search-text.ts';
import type { EventSurface } from './types.ts';

interface StoredEvent {
  session_id: string;
  seq: number;
  type: string;
  surface: EventSurface;
  call_id: string | null;
  parent_call_id: string | null;
  data: string;
  refs: string | null;
  at: number;
}

/** Payloads past this many characters are indexed by their first characters, unparsed. */
const PARSED_PAYLOAD_MAX = 256 * 1024;

/** The searchable text of a payload the event log stores for the first time. */
const payloadIndexText = (json: string): string =>
  json.length <= PARSED_PAYLOAD_MAX
    ? indexText('', json, INDEX_PAYLOAD_MAX)
    : json.slice(0, INDEX_PAYLOAD_MAX);

const prepareIndex = (db: Database) => ({
  entry: db.prepare(
    'INSERT INTO event_index (tenant_id, session_id, seq, type, surface, at) VALUES (?, ?, ?, ?, ?, ?)',
  ),
  tokens: db.prepare('INSERT INTO events_fts (rowid, owner, body) VALUES (?, ?, ?)'),
});

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
): EventBackend => {
  const indexing = options.index ?? true;
  // Prepared at the first write: a log opened only to read needs no index tables.
  let indexStatements: ReturnType<typeof prepareIndex> | undefined;
  const indexOf = () => (indexStatements ??= prepareIndex(db));
  const lastSeq = db.prepare(
    `SELECT max(coalesce((SELECT last_seq FROM sessions WHERE id = ?1), 0),
                coalesce((SELECT max(seq) FROM events WHERE session_id = ?1), 0)) AS seq`,
  );
  const storedSeq = db.prepare('SELECT last_seq FROM sessions WHERE id = ?');
  const upsertSession = db.prepare(
    `INSERT INTO sessions (id, created_at, last_seq) VALUES (?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq)`,
  );
  const insert = db.prepare(
    `INSERT INTO events (session_id, seq, type, surface, call_id, parent_call_id, data, refs, at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const read = db.prepare(
    `SELECT session_id, seq, type, surface, call_id, parent_call_id, data, refs, at FROM events
     WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
  );
  const tenantOf = db.prepare('SELECT tenant_id FROM agents WHERE id = ?');
  const usageOf = db.prepare('SELECT bytes FROM tenant_log_usage WHERE tenant_id = ?');
  const usageAll = db.prepare('SELECT tenant_id, bytes FROM tenant_log_usage');
  const addUsage = db.prepare(
    `INSERT INTO tenant_log_usage (tenant_id, bytes) VALUES (?, ?)
     ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes`,
  );
  const readBlob = db.prepare('SELECT data FROM payloads WHERE tenant_id = ? AND sha256 = ?');
  const hasBlob = db.prepare('SELECT 1 AS x FROM payloads WHERE tenant_id = ? AND sha256 = ?');
  const insertBlob = db.prepare(
    'INSERT OR IGNORE INTO payloads (tenant_id, sha256, bytes, data, created_at) VALUES (?, ?, ?, ?, ?)',
  );

  /** One transaction; `renumber` checks each session's stored last seq first (the rare retry path). */
  const writeBatch = (rows: QueuedRow[], renumber: boolean) =>
    immediate(db, () => {
      const bySession = new Map<string, QueuedRow[]>();
      for (const row of rows) {
        const group = bySession.get(row.sessionId);
        if (group === undefined) bySession.set(row.sessionId, [row]);
        else group.push(row);
      }
      for (const [sessionId, group] of bySession) {
        if (renumber) {
          const stored = (storedSeq.all(sessionId)[0] as { last_seq: number } | undefined)?.last_seq ?? 0;
          if (stored >= group[0]!.seq) {
            group.forEach((row, i) => {
              row.seq = stored + 1 + i;
            });
          }
        }
        upsertSession.run(sessionId, group[0]!.at, group.at(-1)!.seq);
      }
      const usage = new Map<string, number>();
      for (const r of rows) {
        let bytes = r.bytes;
        let text = indexing ? indexText(r.type, r.data) : '';
        for (const blob of r.blobs) {
          // Another process may have stored it meanwhile: count only what this write adds.
          if (insertBlob.run(r.tenantId, blob.sha256, blob.bytes, blob.json, r.at).changes === 0)
            bytes -= blob.bytes;
          else if (indexing) text += ` ${payloadIndexText(blob.json)}`;
        }
        usage.set(r.tenantId, (usage.get(r.tenantId) ?? 0) + bytes);
        insert.run(
          r.sessionId,
          r.seq,
          r.type,
          r.surface,
          r.callId ?? null,
          r.parentCallId ?? null,
          r.data,
          r.refs ?? null,
          r.at,
        );
        if (indexing) {
          const index = indexOf();
          const id = index.entry.run(r.tenantId, r.sessionId, r.seq, r.type, r.surface, r.at).lastInsertRowid;
          index.tokens.run(id, ownerTokens(r.tenantId, r.sessionId), text);
        }
      }
      for (const [tenantId, bytes] of usage) addUsage.run(tenantId, bytes);
    });

  return {
    lastSeq: (sessionId) =>
      guarded('read last event seq', () => (lastSeq.all(sessionId)[0] as { seq: number }).seq),

    tenantOf: (sessionId) =>
      guarded(
        'read session tenant',
        () => (tenantOf.all(sessionId)[0] as { tenant_id: string } | undefined)?.tenant_id ?? '',
      ),

    usage: (tenantId) =>
      guarded(
        'read log usage',
        () => (usageOf.all(tenantId)[0] as { bytes: number } | undefined)?.bytes ?? 0,
      ),

    usageAll: () =>
      guarded('read log usage', () =>
        (usageAll.all() as { tenant_id: string; bytes: number }[]).map((r) => ({
          tenantId: r.tenant_id,
          bytes: r.bytes,
        })),
      ),

    readBlob: (tenantId, sha256) =>
      guarded(
        'read payload',
        () => (readBlob.all(tenantId, sha256)[0] as { data: string } | undefined)?.data,
      ),

    hasBlob: (tenantId, sha256) => guarded('read payload', () => hasBlob.all(tenantId, sha256).length > 0),

    write: (rows) =>
      guarded('write events', () => {
        try {
          writeBatch(rows, false);
        } catch (error) {
          if ((error as { code?: unknown }).code !== 'SQLITE_CONSTRAINT_PRIMARYKEY') throw error;
          writeBatch(rows, true);
        }
      }),

    read: (sessionId, afterSeq, limit) =>
      guarded('read events', () =>
        (read.all(sessionId, afterSeq, limit) as StoredEvent[]).map((r) => ({
          sessionId: r.session_id,
          seq: r.seq,
          type: r.type,
          surface: r.surface,
          callId: r.call_id ?? undefined,
          parentCallId: r.parent_call_id ?? undefined,
          data: r.data,
          refs: r.refs ?? undefined,
          at: r.at,
        })),
      ),
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
