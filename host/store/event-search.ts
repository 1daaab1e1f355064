// Full-text search over the durable session log, on the index the libsql event log writes
// (event-log.ts, search-text.ts): FTS5 finds the entries of the query's tenant (and sessions) whose
// words match, `event_index` says which events they are and filters them, `agents` says what a
// session is. A session here is an agent's log: its id is the agent's id, and it stays searchable
// (`persisted`) after the agent is deleted; a child agent's session has its parent's as parent. Invariants: every query is bound to one tenant twice,
// by the owner tokens inside the FTS5 expression and by `tenant_id` in SQL, so no filter or query
// text can reach another tenant's events; results are bounded by the caller's limit. The port is
// asynchronous (issue 30); the libsql queries behind it stay synchronous prepared statements.
import type LibsqlDatabase from 'libsql';
import { type Database, guarded } from './db.ts';
import {
  type HitRow,
  MAX_SEARCH_SESSIONS,
  type SessionRow,
  toHit,
  toSessionInfo,
} from './event-search-rows.ts';
import { ftsExpression } from './search-text.ts';
import type { EventHit, EventSearch, EventSearchQuery, SessionInfo } from './types.ts';

export { MAX_SEARCH_SESSIONS } from './event-search-rows.ts';

export const createEventSearch = (db: Database): EventSearch => {
  // Prepared at first use, so a search on a schema before migration 10 (migration tests) still opens.
  let sessionRow: LibsqlDatabase.Statement | undefined;

  function search(q: EventSearchQuery): EventHit[] {
    const sessions = q.sessionIds?.slice(0, MAX_SEARCH_SESSIONS);
    if (sessions !== undefined && sessions.length === 0) return [];
    const match = ftsExpression(q.query, q.tenantId, sessions);
    if (match === undefined || q.limit <= 0) return [];
    const where = ['events_fts MATCH ?', 'm.tenant_id = ?'];
    const params: (string | number)[] = [match, q.tenantId];
    const range = (column: string, from: number | undefined, to: number | undefined) => {
      if (from !== undefined) {
        where.push(`${column} >= ?`);
        params.push(from);
      }
      if (to !== undefined) {
        where.push(`${column} <= ?`);
        params.push(to);
      }
    };
    const among = (column: string, values: readonly string[] | undefined) => {
      if (values === undefined) return;
      where.push(`${column} IN (${values.map(() => '?').join(', ') || 'NULL'})`);
      params.push(...values);
    };
    if (sessions !== undefined) among('m.session_id', sessions);
    range('m.seq', q.seqFrom, q.seqTo);
    range('m.at', q.timeFrom, q.timeTo);
    among('m.type', q.types);
    among('m.surface', q.surfaces);
    range('a.created_at', q.createdFrom, q.createdTo);
    const availability = new Set(q.availability ?? ['live', 'persisted']);
    if (!availability.has('live')) where.push('a.deleted_at IS NOT NULL');
    if (!availability.has('persisted')) where.push('a.deleted_at IS NULL');
    if (availability.size === 0) return [];
    params.push(Math.trunc(q.limit));
    const sql = `SELECT m.session_id AS session_id, m.seq AS seq, m.type AS type, m.surface AS surface, m.at AS at
      FROM events_fts JOIN event_index m ON m.id = events_fts.rowid
      JOIN agents a ON a.id = m.session_id AND a.tenant_id = m.tenant_id
      WHERE ${where.join(' AND ')} ORDER BY events_fts.rowid DESC LIMIT ?`;
    return guarded('search the session log', () => (db.prepare(sql).all(...params) as HitRow[]).map(toHit));
  }

  function session(tenantId: string, id: string): SessionInfo | undefined {
    return guarded('read a session', () => {
      sessionRow ??= db.prepare(
        `SELECT a.id AS id, a.created_at AS created_at, a.deleted_at AS deleted_at, a.parent_id AS parent_id,
                coalesce((SELECT last_seq FROM sessions WHERE id = a.id), 0) AS last_seq
         FROM agents a WHERE a.id = ? AND a.tenant_id = ?`,
      );
      const row = sessionRow.all(id, tenantId)[0] as SessionRow | undefined;
      return row === undefined ? undefined : toSessionInfo(row);
    });
  }

  function children(tenantId: string, parentIds: readonly string[]): string[] {
    const parents = parentIds.slice(0, MAX_SEARCH_SESSIONS);
    if (parents.length === 0) return [];
    return guarded('list child sessions', () =>
      (
        db
          .prepare(
            `SELECT id FROM agents WHERE tenant_id = ? AND parent_id IN (${parents.map(() => '?').join(', ')})
             ORDER BY created_at, rowid`,
          )
          .all(tenantId, ...parents) as { id: string }[]
      ).map((r) => r.id),
    );
  }

  let countRow: LibsqlDatabase.Statement | undefined;
  function count(tenantId: string, id: string, type: string): number {
    return guarded('count session events', () => {
      // Covered by event_index_session_type; the tenant is checked on the session's agent.
      countRow ??= db.prepare(
        `SELECT count(*) AS n FROM event_index
         WHERE session_id = ?1 AND type = ?2 AND EXISTS (SELECT 1 FROM agents WHERE id = ?1 AND tenant_id = ?3)`,
      );
      return (countRow.all(id, type, tenantId)[0] as { n: number }).n;
    });
  }

  // The queries stay synchronous statements; the port answers with promises (issue 30).
  return {
    search: async (q) => search(q),
    session: async (tenantId, id) => session(tenantId, id),
    children: async (tenantId, parentIds) => children(tenantId, parentIds),
    count: async (tenantId, id, type) => count(tenantId, id, type),
  };
};
