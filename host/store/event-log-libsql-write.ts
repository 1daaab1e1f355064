// The libsql event backend's write (event-log.ts): one batch of queued rows in one BEGIN IMMEDIATE
// transaction, with their sessions, payloads, byte usage and full-text index entries.
// Invariants: a session row exists (and its last_seq is raised, its open_calls moved by the rows'
// calls minus their results: the same statement) before its events are inserted;
// the common path reads nothing (a read costs as much as two inserts); if a second process wrote
// the session meanwhile, the insert hits the primary key and the batch is retried once, renumbered
// after the stored rows, so stored seqs stay unique and gap-free. Payloads live in `payloads` (one
// row per tenant and sha256, INSERT OR IGNORE; `uses` raised once per row naming it), and the same transaction adds what the batch really
// stored to `tenant_log_usage` and indexes every row for full-text search (search-text.ts): an
// `event_index` entry and its tokens in `events_fts`, the payloads the row newly stored included.
import type LibsqlDatabase from 'libsql';
import { type Database, guarded, immediate } from './db.ts';
import type { QueuedRow } from './event-log-port.ts';
import { groupBySession, openedBy, renumberAfter, usedShas } from './event-log-rows.ts';
import { indexText, ownerTokens, payloadIndexText } from './search-text.ts';

const prepareIndex = (db: Database) => ({
  entry: db.prepare(
    'INSERT INTO event_index (tenant_id, session_id, seq, type, surface, at) VALUES (?, ?, ?, ?, ?, ?)',
  ),
  tokens: db.prepare('INSERT INTO events_fts (rowid, owner, body) VALUES (?, ?, ?)'),
});

const indexOf = (state: EventWrites) => (state.indexStatements ??= prepareIndex(state.db));

export interface EventWrites {
  readonly db: Database;
  readonly indexing: boolean;
  /** Prepared at the first write: a log opened only to read needs no index tables. */
  indexStatements: ReturnType<typeof prepareIndex> | undefined;
  readonly storedSeq: LibsqlDatabase.Statement;
  readonly upsertSession: LibsqlDatabase.Statement;
  readonly insert: LibsqlDatabase.Statement;
  readonly addUsage: LibsqlDatabase.Statement;
  readonly insertBlob: LibsqlDatabase.Statement;
  readonly addUse: LibsqlDatabase.Statement;
}

export function prepareWrites(db: Database, indexing: boolean): EventWrites {
  return {
    db,
    indexing,
    indexStatements: undefined,
    storedSeq: db.prepare('SELECT last_seq FROM sessions WHERE id = ?'),
    upsertSession: db.prepare(
      `INSERT INTO sessions (id, created_at, last_seq, open_calls) VALUES (?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq),
         open_calls = open_calls + excluded.open_calls`,
    ),
    insert: db.prepare(
      `INSERT INTO events (session_id, seq, type, surface, call_id, parent_call_id, data, refs, at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    addUsage: db.prepare(
      `INSERT INTO tenant_log_usage (tenant_id, bytes) VALUES (?, ?)
       ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes`,
    ),
    insertBlob: db.prepare(
      'INSERT OR IGNORE INTO payloads (tenant_id, sha256, bytes, data, created_at) VALUES (?, ?, ?, ?, ?)',
    ),
    addUse: db.prepare('UPDATE payloads SET uses = uses + 1 WHERE tenant_id = ? AND sha256 = ?'),
  };
}

/** Writes the rows, retrying once renumbered if another process wrote one of their sessions. */
export function writeEvents(state: EventWrites, rows: QueuedRow[]): void {
  guarded('write events', () => {
    try {
      writeBatch(state, rows, false);
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_CONSTRAINT_PRIMARYKEY') throw error;
      writeBatch(state, rows, true);
    }
  });
}

/** One transaction; `renumber` checks each session's stored last seq first (the rare retry path). */
function writeBatch(state: EventWrites, rows: QueuedRow[], renumber: boolean): void {
  const { db, indexing, storedSeq, upsertSession, insert, addUsage, insertBlob, addUse } = state;
  immediate(db, () => {
    for (const [sessionId, group] of groupBySession(rows)) {
      if (renumber) {
        renumberAfter(
          group,
          (storedSeq.all(sessionId)[0] as { last_seq: number } | undefined)?.last_seq ?? 0,
        );
      }
      upsertSession.run(sessionId, group[0]!.at, group.at(-1)!.seq, openedBy(group));
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
      // One use of each payload the row names (retention removes a payload with its last use).
      if (r.refs !== undefined) for (const sha of usedShas(r.refs)) addUse.run(r.tenantId, sha);
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
        const index = indexOf(state);
        const id = index.entry.run(r.tenantId, r.sessionId, r.seq, r.type, r.surface, r.at).lastInsertRowid;
        index.tokens.run(id, ownerTokens(r.tenantId, r.sessionId), text);
      }
    }
    for (const [tenantId, bytes] of usage) addUsage.run(tenantId, bytes);
  });
}
