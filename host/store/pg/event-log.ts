// The EventLog on PostgreSQL: the shared batching core (../event-log-core.ts) over an asynchronous
// EventBackend on the same tables and rows as the libsql one (../event-log.ts): `events`,
// `sessions`, `payloads` (once per tenant and sha256), `tenant_log_usage` (the core's row cost,
// what a write really stored) and `event_index` (with its `search` tsvector in place of SQLite's
// events_fts). This module owns the reads and wires the write (event-log-write.ts says its
// transaction, its locks and where it differs from libsql).
// Invariants, as on libsql: a session's last seq is max(sessions.last_seq, max(events.seq)), so a
// reopened log continues without gaps; a session's tenant is its agent's ('' when none is known);
// a page is in seq order, after `afterSeq`, at most `limit` rows (the core pages in bytes over it);
// the repair's call rows are read only for sessions whose open_calls (kept by the write) is above 0.
// The core keeps one write in flight (group commit: everything appended meanwhile goes into the
// next transaction), so a log holds at most one pool connection for writing.
// Durability: one transaction per batch, committed with the server's synchronous_commit (on by
// default: the commit is flushed to the server's WAL before it answers). An append is durable when
// flush() resolves, not when append() does; subscribers hear about events only once committed.
// With synchronous_commit off a server crash may lose the last commits it answered, which the
// seqs survive as on libsql (the next write renumbers after what was really stored).

import { SandboxError } from '../../errors.ts';
import { createEventLog } from '../event-log-core.ts';
import type {
  ClosableEventLog,
  EventBackend,
  EventFence,
  EventLogOptions,
  FenceToken,
  QueuedRow,
} from '../event-log-port.ts';
import { EVENT_COLUMNS, logBytesOf, type StoredEvent, toEventRow, toUsage } from '../event-log-rows.ts';
import { type PgDatabase, type PgQueries, pgGuarded } from './db.ts';
import { committed, type WriteAttempt, writePgEvents } from './event-log-write.ts';
import { heldFamilies } from './leases.ts';

export interface PgEventLogOptions extends EventLogOptions {
  /** Index every event for full-text search. Default true; false only to measure what it costs. */
  index?: boolean;
}

export const createPgEventBackend = (
  db: PgDatabase,
  options: { index?: boolean; fence?: EventFence } = {},
): EventBackend => {
  const indexing = options.index ?? true;
  const fence = options.fence;
  return {
    lastSeq: (sessionId) =>
      pgGuarded('read last event seq', async () => {
        const row = await db.one<{ seq: number }>(
          `SELECT greatest(coalesce((SELECT last_seq FROM sessions WHERE id = $1), 0),
                           coalesce((SELECT max(seq) FROM events WHERE session_id = $1), 0)) AS seq`,
          [sessionId],
        );
        return row?.seq ?? 0;
      }),
    tenantOf: (sessionId) =>
      pgGuarded('read session tenant', async () => {
        const row = await db.one<{ tenant_id: string }>('SELECT tenant_id FROM agents WHERE id = $1', [
          sessionId,
        ]);
        return row?.tenant_id ?? '';
      }),
    usage: (tenantId) =>
      pgGuarded('read log usage', async () => {
        const row = await db.one<{ bytes: number }>(
          'SELECT bytes FROM tenant_log_usage WHERE tenant_id = $1',
          [tenantId],
        );
        return row?.bytes ?? 0;
      }),
    usageAll: () =>
      pgGuarded('read log usage', async () =>
        (
          await db.many<{ tenant_id: string; bytes: number }>('SELECT tenant_id, bytes FROM tenant_log_usage')
        ).map(toUsage),
      ),
    quotaOf: (tenantId) =>
      pgGuarded('read log quota', async () =>
        logBytesOf(
          (await db.one<{ quotas: string | null }>('SELECT quotas FROM tenants WHERE id = $1', [tenantId]))
            ?.quotas,
        ),
      ),
    readBlob: (tenantId, sha256) =>
      pgGuarded('read payload', async () => {
        const row = await db.one<{ data: string }>(
          'SELECT data FROM payloads WHERE tenant_id = $1 AND sha256 = $2',
          [tenantId, sha256],
        );
        return row?.data;
      }),
    hasBlob: (tenantId, sha256) =>
      pgGuarded('read payload', async () => {
        const row = await db.one('SELECT 1 AS x FROM payloads WHERE tenant_id = $1 AND sha256 = $2', [
          tenantId,
          sha256,
        ]);
        return row !== undefined;
      }),
    write: (rows) =>
      pgGuarded('write events', async () => {
        const written: WriteAttempt = { xid: undefined };
        try {
          await db.tx(async (q) => {
            if (fence !== undefined) await checkFence(q, fence, rows);
            await writePgEvents(q, rows, indexing, written);
          });
        } catch (error) {
          // A COMMIT whose answer was lost may have committed: then the batch is stored.
          if (written.xid === undefined || !(await committed(db, written.xid))) throw error;
        }
      }),
    read: (sessionId, afterSeq, limit) =>
      pgGuarded('read events', async () =>
        (
          await db.many<StoredEvent>(
            `SELECT ${EVENT_COLUMNS} FROM events
             WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
            [sessionId, afterSeq, limit],
          )
        ).map(toEventRow),
      ),
    firstSeq: (sessionId) =>
      pgGuarded('read first kept seq', async () => {
        const row = await db.one<{ first_seq: number | string }>(
          'SELECT first_seq FROM sessions WHERE id = $1',
          [sessionId],
        );
        return Number(row?.first_seq ?? 1);
      }),
    callRows: (sessionIds) =>
      pgGuarded('read open calls', async () => {
        // The candidate sessions first (one row per session), then their rows by the primary key:
        // one statement joining both could be planned as a scan of all events.
        const ids = (
          await db.many<{ id: string }>(
            sessionIds === undefined
              ? 'SELECT id FROM sessions WHERE open_calls > 0 ORDER BY id COLLATE "C"'
              : 'SELECT id FROM sessions WHERE id = ANY($1::text[]) AND open_calls > 0 ORDER BY id COLLATE "C"',
            sessionIds === undefined ? [] : [[...sessionIds]],
          )
        ).map((r) => r.id);
        if (ids.length === 0) return [];
        return (
          await db.many<StoredEvent>(
            `SELECT session_id, seq, type, surface, call_id, parent_call_id,
                    CASE type WHEN 'tool.call' THEN data ELSE '{}' END AS data, NULL AS refs, at
             FROM events WHERE session_id = ANY($1::text[]) AND type IN ('tool.call', 'tool.result')
             ORDER BY session_id COLLATE "C", seq`,
            [ids],
          )
        ).map(toEventRow);
      }),
  };
};

/**
 * With replicas: refuses the whole write (OWNER_FENCED) when one of its families is no longer this
 * replica's in the epoch its rows were appended in, after telling the fence, so the log's next
 * attempt drops those rows and writes the rest. The lease rows stay locked until the write commits.
 */
async function checkFence(q: PgQueries, fence: EventFence, rows: readonly QueuedRow[]): Promise<void> {
  const tokens = new Map<string, FenceToken>();
  for (const row of rows)
    if (row.fence !== undefined && row.fence !== 'lost') tokens.set(row.fence.familyId, row.fence);
  if (tokens.size === 0) return;
  const held = await heldFamilies(q, fence.replicaId, [...tokens.values()]);
  if (held.size === tokens.size) return;
  const lost = [...tokens.keys()].filter((familyId) => !held.has(familyId));
  fence.lost(lost);
  throw new SandboxError(
    'OWNER_FENCED',
    `this replica no longer owns the agent families ${lost.join(', ')}; their events were not written`,
    { data: { families: lost } },
  );
}

/**
 * An EventLog persisted in the Postgres store database. Await `close()` before closing `db`: it
 * writes what is queued and waits for the write in flight.
 */
export const createPgEventLog = (db: PgDatabase, options: PgEventLogOptions = {}): ClosableEventLog =>
  createEventLog(createPgEventBackend(db, options), options);
