// The libsql event backend's reads (event-log.ts): a session's last seq and tenant, tenants' stored
// log bytes and log budgets (their `logBytes` quota), payloads by tenant and sha256, a page of a session's events, and the call and result
// rows of the sessions with open calls (sessions.open_calls > 0: the repair after a crash).
// Invariants: a session's last seq is max(sessions.last_seq, max(events.seq)), so a reopened log
// continues without gaps; a session's tenant is its agent's ('' when none is known); a page is in
// seq order, after `afterSeq`, at most `limit` rows, with absent columns read as undefined.
import type LibsqlDatabase from 'libsql';
import { type Database, guarded } from './db.ts';
import type { EventRow } from './event-log-port.ts';
import { EVENT_COLUMNS, logBytesOf, type StoredEvent, toEventRow, toUsage } from './event-log-rows.ts';

export interface EventReads {
  readonly lastSeq: LibsqlDatabase.Statement;
  readonly read: LibsqlDatabase.Statement;
  readonly tenantOf: LibsqlDatabase.Statement;
  readonly usageOf: LibsqlDatabase.Statement;
  readonly usageAll: LibsqlDatabase.Statement;
  readonly readBlob: LibsqlDatabase.Statement;
  readonly hasBlob: LibsqlDatabase.Statement;
  readonly openSessions: LibsqlDatabase.Statement;
  readonly openSession: LibsqlDatabase.Statement;
  readonly callRows: LibsqlDatabase.Statement;
  readonly firstSeq: LibsqlDatabase.Statement;
}

export function prepareReads(db: Database): EventReads {
  return {
    lastSeq: db.prepare(
      `SELECT max(coalesce((SELECT last_seq FROM sessions WHERE id = ?1), 0),
                  coalesce((SELECT max(seq) FROM events WHERE session_id = ?1), 0)) AS seq`,
    ),
    read: db.prepare(
      `SELECT ${EVENT_COLUMNS} FROM events
       WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
    ),
    tenantOf: db.prepare('SELECT tenant_id FROM agents WHERE id = ?'),
    usageOf: db.prepare('SELECT bytes FROM tenant_log_usage WHERE tenant_id = ?'),
    usageAll: db.prepare('SELECT tenant_id, bytes FROM tenant_log_usage'),
    readBlob: db.prepare('SELECT data FROM payloads WHERE tenant_id = ? AND sha256 = ?'),
    hasBlob: db.prepare('SELECT 1 AS x FROM payloads WHERE tenant_id = ? AND sha256 = ?'),
    // One row per session: far fewer than events, and read only when a repair asks.
    openSessions: db.prepare('SELECT id FROM sessions WHERE open_calls > 0 ORDER BY id'),
    openSession: db.prepare('SELECT id FROM sessions WHERE id = ? AND open_calls > 0'),
    // The session's own range of the primary key; a result's data is not needed.
    callRows: db.prepare(
      `SELECT session_id, seq, type, surface, call_id, parent_call_id,
              CASE type WHEN 'tool.call' THEN data ELSE '{}' END AS data, NULL AS refs, at
       FROM events WHERE session_id = ? AND type IN ('tool.call', 'tool.result') ORDER BY seq`,
    ),
    firstSeq: db.prepare('SELECT first_seq FROM sessions WHERE id = ?'),
  };
}

export function lastSeqOf(reads: EventReads, sessionId: string): number {
  return guarded('read last event seq', () => (reads.lastSeq.all(sessionId)[0] as { seq: number }).seq);
}

export function tenantOfSession(reads: EventReads, sessionId: string): string {
  return guarded(
    'read session tenant',
    () => (reads.tenantOf.all(sessionId)[0] as { tenant_id: string } | undefined)?.tenant_id ?? '',
  );
}

export function usageOf(reads: EventReads, tenantId: string): number {
  return guarded(
    'read log usage',
    () => (reads.usageOf.all(tenantId)[0] as { bytes: number } | undefined)?.bytes ?? 0,
  );
}

/**
 * Reads a tenant's own log budget (its `logBytes` quota), undefined when it has none. Prepared at
 * its first read; a store migrated only up to before tenants had quotas (the migration tests
 * append there) has none.
 */
export function logQuotaReader(db: Database): (tenantId: string) => number | undefined {
  let read: LibsqlDatabase.Statement | null | undefined;
  return (tenantId) =>
    guarded('read log quota', () => {
      if (read === undefined) {
        const columns = db.prepare('SELECT name FROM pragma_table_info(?)').all('tenants') as {
          name: string;
        }[];
        read = columns.some((c) => c.name === 'quotas')
          ? db.prepare('SELECT quotas FROM tenants WHERE id = ?')
          : null;
      }
      if (read === null) return undefined;
      return logBytesOf((read.all(tenantId)[0] as { quotas: string | null } | undefined)?.quotas);
    });
}

export function usageOfAll(reads: EventReads): { tenantId: string; bytes: number }[] {
  return guarded('read log usage', () =>
    (reads.usageAll.all() as { tenant_id: string; bytes: number }[]).map(toUsage),
  );
}

export function readBlob(reads: EventReads, tenantId: string, sha256: string): string | undefined {
  return guarded(
    'read payload',
    () => (reads.readBlob.all(tenantId, sha256)[0] as { data: string } | undefined)?.data,
  );
}

export function hasBlob(reads: EventReads, tenantId: string, sha256: string): boolean {
  return guarded('read payload', () => reads.hasBlob.all(tenantId, sha256).length > 0);
}

export function readEvents(
  reads: EventReads,
  sessionId: string,
  afterSeq: number,
  limit: number,
): EventRow[] {
  return guarded('read events', () =>
    (reads.read.all(sessionId, afterSeq, limit) as StoredEvent[]).map(toEventRow),
  );
}

/** Where the session's kept log starts (1 until retention removed some: migration 24). */
export function firstSeqOf(reads: EventReads, sessionId: string): number {
  return guarded(
    'read first kept seq',
    () => (reads.firstSeq.all(sessionId)[0] as { first_seq: number } | undefined)?.first_seq ?? 1,
  );
}

export function callRowsOf(reads: EventReads, sessionIds: readonly string[] | undefined): EventRow[] {
  return guarded('read open calls', () => {
    const ids =
      sessionIds === undefined
        ? (reads.openSessions.all() as { id: string }[]).map((r) => r.id)
        : [...new Set(sessionIds)].sort().filter((id) => reads.openSession.all(id).length > 0);
    return ids.flatMap((id) => (reads.callRows.all(id) as StoredEvent[]).map(toEventRow));
  });
}
