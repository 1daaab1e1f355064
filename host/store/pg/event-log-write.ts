// The Postgres event backend's write (event-log.ts): one batch of queued rows in ONE transaction,
// with their sessions, payloads, byte usage and full-text index entries, the same rows as the
// libsql write (../event-log-libsql-write.ts). Every statement is a multi-row INSERT over unnest()
// arrays (a fixed number of parameters whatever the batch), cut at WRITE_CHUNK_ROWS rows or
// WRITE_CHUNK_CHARS characters of text so no statement grows without bound.
// Invariants: all rows, their payloads, usage and index entries are stored, or nothing (the
// transaction); a session row exists (locked) before its events are inserted, and its last_seq
// is raised and its open_calls moved (the rows' calls minus their results), with the tenants'
// usage, by CTEs of the statement that inserts the batch's last rows.
// Where libsql relies on BEGIN IMMEDIATE's single writer, this write locks its sessions' rows first
// (an upsert whose conflict branch only locks, in id order, so two writers never wait on each other
// in a cycle): a second replica writing the same session waits for this transaction, then reads the
// seq this one stored. When that stored seq has reached a batch's first row of the session, the
// session's rows are renumbered after it in place (libsql does the same on a primary-key clash),
// so stored seqs stay unique and gap-free. Payloads are inserted ON CONFLICT DO NOTHING (one row
// per tenant and sha256; sorted, so concurrent writers take their index entries in one order; their
// `uses` raised once per row naming them, in the same order): only
// those this write really stored count towards `tenant_log_usage` and are indexed with the row that
// stored them. Usage is added last, in tenant order. The `search` tsvector is filled as
// baseline.ts's header says (owner tokens weight A, indexed text weight D, 'simple' config), over
// the text's words as FTS5 would cut them (search-words.ts).
// A commit whose answer is lost (the connection dropped during COMMIT) looks like a failed write;
// the backend then asks the server about the transaction (committed(): txid_status) and answers
// success when it did commit, so the core does not store the batch twice. Only when that question
// fails too (the server unreachable) is the batch retried, and then stored again, renumbered after
// the first copy (libsql's writer thread has no such window: its commit is local).
// Differs from libsql: the index text of one row is cut at PG_INDEX_TEXT_MAX characters in all
// (libsql indexes the first 16 KiB of every payload a row newly stores, however many): a tsvector
// holds at most 1 MiB, and a row whose tsvector would not fit would fail its batch on every retry.
import type { QueuedRow } from '../event-log-port.ts';
import { groupBySession, openedBy, renumberAfter, usedShas } from '../event-log-rows.ts';
import {
  INDEX_PAYLOAD_MAX,
  INDEX_TEXT_MAX,
  indexText,
  ownerTokens,
  payloadIndexText,
} from '../search-text.ts';
import type { PgQueries } from './db.ts';
import { searchWords } from './search-words.ts';

/** Most characters indexed for one row: its own text and six new payloads' worth (see the header). */
export const PG_INDEX_TEXT_MAX = INDEX_TEXT_MAX + 6 * INDEX_PAYLOAD_MAX;
/** Most rows one INSERT carries. */
const WRITE_CHUNK_ROWS = 1000;
/** About the most characters of data one INSERT carries (a chunk holds at least one row). */
const WRITE_CHUNK_CHARS = 8 * 1024 * 1024;

const SEARCH = `setweight(to_tsvector('simple', x.owner), 'A') || setweight(to_tsvector('simple', x.body), 'D')`;

/** Consecutive slices of `items`, each at most WRITE_CHUNK_ROWS long and about WRITE_CHUNK_CHARS big. */
function chunks<T>(items: readonly T[], size: (item: T) => number): T[][] {
  const out: T[][] = [];
  let chunk: T[] = [];
  let chars = 0;
  for (const item of items) {
    const n = size(item);
    if (chunk.length > 0 && (chunk.length >= WRITE_CHUNK_ROWS || chars + n > WRITE_CHUNK_CHARS)) {
      out.push(chunk);
      chunk = [];
      chars = 0;
    }
    chunk.push(item);
    chars += n;
  }
  if (chunk.length > 0) out.push(chunk);
  return out;
}

/** Locks the batch's sessions (creating missing ones) and renumbers rows another writer got ahead of. */
async function lockSessions(
  q: PgQueries,
  rows: QueuedRow[],
  written: WriteAttempt,
): Promise<Map<string, { lastSeq: number; opened: number }>> {
  const bySession = groupBySession(rows);
  const ids = [...bySession.keys()].sort();
  const stored = await q.many<{ id: string; last_seq: number; xid: number }>(
    `INSERT INTO sessions AS t (id, created_at, last_seq)
     SELECT id, created_at, 0 FROM unnest($1::text[], $2::bigint[]) AS x(id, created_at) ORDER BY id
     ON CONFLICT (id) DO UPDATE SET last_seq = t.last_seq
     RETURNING t.id, t.last_seq, txid_current() AS xid`,
    [ids, ids.map((id) => bySession.get(id)![0]!.at)],
  );
  written.xid = stored[0]?.xid;
  const last = new Map<string, { lastSeq: number; opened: number }>();
  for (const { id, last_seq } of stored) {
    const group = bySession.get(id)!;
    renumberAfter(group, last_seq);
    last.set(id, { lastSeq: group.at(-1)!.seq, opened: openedBy(group) });
  }
  return last;
}

/** Inserts the batch's new payloads; the keys (`tenant\0sha256`) of those this write stored. */
async function insertPayloads(q: PgQueries, rows: QueuedRow[]): Promise<Set<string>> {
  const blobs = new Map<
    string,
    { tenantId: string; sha256: string; bytes: number; json: string; at: number }
  >();
  for (const row of rows)
    for (const blob of row.blobs) {
      const key = `${row.tenantId}\0${blob.sha256}`;
      if (!blobs.has(key)) blobs.set(key, { tenantId: row.tenantId, ...blob, at: row.at });
    }
  const stored = new Set<string>();
  if (blobs.size === 0) return stored;
  const sorted = [...blobs.values()].sort((a, b) =>
    a.tenantId === b.tenantId ? (a.sha256 < b.sha256 ? -1 : 1) : a.tenantId < b.tenantId ? -1 : 1,
  );
  for (const chunk of chunks(sorted, (b) => b.json.length)) {
    const inserted = await q.many<{ tenant_id: string; sha256: string }>(
      `INSERT INTO payloads (tenant_id, sha256, bytes, data, created_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[])
       ON CONFLICT (tenant_id, sha256) DO NOTHING
       RETURNING tenant_id, sha256`,
      [
        chunk.map((b) => b.tenantId),
        chunk.map((b) => b.sha256),
        chunk.map((b) => b.bytes),
        chunk.map((b) => b.json),
        chunk.map((b) => b.at),
      ],
    );
    for (const r of inserted) stored.add(`${r.tenant_id}\0${r.sha256}`);
  }
  return stored;
}

/** Adds one use to each payload per row naming it (migration 24; retention takes them back). */
async function addUses(q: PgQueries, rows: QueuedRow[]): Promise<void> {
  const uses = new Map<string, { tenantId: string; sha256: string; n: number }>();
  for (const row of rows) {
    if (row.refs === undefined) continue;
    for (const sha256 of usedShas(row.refs)) {
      const key = `${row.tenantId}\0${sha256}`;
      const use = uses.get(key);
      if (use === undefined) uses.set(key, { tenantId: row.tenantId, sha256, n: 1 });
      else use.n++;
    }
  }
  if (uses.size === 0) return;
  // In key order, as insertPayloads takes its rows: two writers never wait on each other in a cycle.
  const sorted = [...uses.values()].sort((a, b) =>
    a.tenantId === b.tenantId ? (a.sha256 < b.sha256 ? -1 : 1) : a.tenantId < b.tenantId ? -1 : 1,
  );
  await q.query(
    `UPDATE payloads p SET uses = p.uses + x.n
     FROM unnest($1::text[], $2::text[], $3::bigint[]) AS x(tenant_id, sha256, n)
     WHERE p.tenant_id = x.tenant_id AND p.sha256 = x.sha256`,
    [sorted.map((u) => u.tenantId), sorted.map((u) => u.sha256), sorted.map((u) => u.n)],
  );
}

/** What the caller learns of a write that may fail: its transaction's id, once it has one. */
export interface WriteAttempt {
  xid: number | undefined;
}

/**
 * Writes the rows in one transaction on `q` (the caller's db.tx), renumbering them when needed;
 * `written.xid` is the transaction's id (so a failed COMMIT can be asked about: committed()).
 */
export async function writePgEvents(
  q: PgQueries,
  rows: QueuedRow[],
  indexing: boolean,
  written: WriteAttempt,
): Promise<void> {
  const lastSeqs = await lockSessions(q, rows, written);
  const newBlobs = await insertPayloads(q, rows);
  await addUses(q, rows);
  const usage = new Map<string, number>();
  const bodies: string[] = [];
  for (const r of rows) {
    let bytes = r.bytes;
    let text = indexing ? indexText(r.type, r.data) : '';
    for (const blob of r.blobs) {
      // Stored already (by another writer, or by an earlier row of this batch): not counted again.
      if (!newBlobs.delete(`${r.tenantId}\0${blob.sha256}`)) bytes -= blob.bytes;
      else if (indexing && text.length < PG_INDEX_TEXT_MAX) text += ` ${payloadIndexText(blob.json)}`;
    }
    usage.set(r.tenantId, (usage.get(r.tenantId) ?? 0) + bytes);
    if (indexing) bodies.push(searchWords(text.slice(0, PG_INDEX_TEXT_MAX)));
  }
  // The sessions' new last_seq and open calls and the tenants' usage: CTEs of the batch's last
  // INSERT (one round trip fewer per batch: on a busy host each statement costs the writer's thread
  // a socket write and a wake-up of the server, ~100 µs), or a statement of their own when the
  // batch has no rows left.
  const ids = [...lastSeqs.keys()];
  const tenants = [...usage.keys()].sort();
  const tailParams = [
    ids,
    ids.map((id) => lastSeqs.get(id)!.lastSeq),
    ids.map((id) => lastSeqs.get(id)!.opened),
    tenants,
    tenants.map((t) => usage.get(t)),
  ];
  const tail = (first: number) => `raised AS (
       UPDATE sessions SET last_seq = greatest(sessions.last_seq, x.last_seq),
         open_calls = sessions.open_calls + x.opened
       FROM unnest($${first}::text[], $${first + 1}::bigint[], $${first + 2}::integer[])
            AS x(id, last_seq, opened) WHERE sessions.id = x.id
     ), used AS (
       INSERT INTO tenant_log_usage AS u (tenant_id, bytes)
       SELECT * FROM unnest($${first + 3}::text[], $${first + 4}::bigint[]) ORDER BY 1
       ON CONFLICT (tenant_id) DO UPDATE SET bytes = u.bytes + excluded.bytes
     )`;
  const parts = chunks(rows, (r) => r.data.length + (r.refs?.length ?? 0));
  let offset = 0;
  for (const [n, chunk] of parts.entries()) {
    const last = n === parts.length - 1;
    const body = bodies.slice(offset, offset + chunk.length);
    offset += chunk.length;
    const events = [
      chunk.map((r) => r.sessionId),
      chunk.map((r) => r.seq),
      chunk.map((r) => r.type),
      chunk.map((r) => r.surface),
      chunk.map((r) => r.callId ?? null),
      chunk.map((r) => r.parentCallId ?? null),
      chunk.map((r) => r.data),
      chunk.map((r) => r.refs ?? null),
      chunk.map((r) => r.at),
    ];
    const insertEvents = `INSERT INTO events (session_id, seq, type, surface, call_id, parent_call_id, data, refs, at)
      SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[],
                           $7::text[], $8::text[], $9::bigint[])`;
    if (!indexing) {
      if (last) await q.query(`WITH ${tail(10)} ${insertEvents}`, [...events, ...tailParams]);
      else await q.query(insertEvents, events);
      continue;
    }
    // One statement for both: index ids follow the rows' order (newest last, as search expects).
    await q.query(
      `WITH stored AS (${insertEvents})${last ? `, ${tail(13)}` : ''}
       INSERT INTO event_index (tenant_id, session_id, seq, type, surface, at, search)
       SELECT x.tenant_id, x.session_id, x.seq, x.type, x.surface, x.at, ${SEARCH}
       FROM unnest($10::text[], $1::text[], $2::bigint[], $3::text[], $4::text[], $9::bigint[],
                   $11::text[], $12::text[])
            WITH ORDINALITY AS x(tenant_id, session_id, seq, type, surface, at, owner, body, n)
       ORDER BY x.n`,
      [
        ...events,
        chunk.map((r) => r.tenantId),
        chunk.map((r) => ownerTokens(r.tenantId, r.sessionId)),
        body,
        ...(last ? tailParams : []),
      ],
    );
  }
  if (parts.length > 0) return;
  await q.query(`WITH ${tail(1)} SELECT 1`, tailParams);
}

/** Whether transaction `xid` committed, asked on another connection; false when unknown. */
export async function committed(q: PgQueries, xid: number): Promise<boolean> {
  try {
    const row = await q.one<{ status: string | null }>('SELECT txid_status($1) AS status', [xid]);
    return row?.status === 'committed';
  } catch {
    return false;
  }
}
