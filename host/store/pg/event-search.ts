// Full-text search over the durable session log on PostgreSQL: the EventSearch of
// ../event-search.ts over the rows the Postgres event log writes (pg/event-log-write.ts):
// `event_index.search`, a tsvector with a GIN index, holds each event's owner tokens (its tenant
// and session, weight A) and its indexed text (weight D), as baseline.ts's header says; `agents`
// says what a session is. A session here is an agent's log: its id is the agent's id, and it stays
// searchable (`persisted`) after the agent is deleted; a child agent's session has its parent's as
// parent.
// Invariants, as on libsql: every query is bound to one tenant twice, by its owner token inside
// the tsquery (`'t<hex>':A`, so the GIN index itself intersects the search with the tenant, as
// FTS5's `owner :` does) and by `tenant_id` in SQL, so no filter or query text can reach another
// tenant's events; every search-box term must occur in the indexed text (weight D only, as FTS5's
// `body :`), a term is a phrase (phraseto_tsquery: its words adjacent, in order) and never tsquery
// syntax (a parameter, cut into words as the indexed text was: search-words.ts); results
// are newest first by index id and bounded by the caller's limit.
import {
  type HitRow,
  MAX_SEARCH_SESSIONS,
  type SessionRow,
  toHit,
  toSessionInfo,
} from '../event-search-rows.ts';
import { ownerTokens, queryTerms } from '../search-text.ts';
import type { EventHit, EventSearch, EventSearchQuery, SessionInfo } from '../types.ts';
import { type PgDatabase, pgGuarded } from './db.ts';
import { searchWords } from './search-words.ts';

/** The owner tokens (`t<hex>`, `s<hex>`: letters and digits only, safe in tsquery text) of a tenant and sessions. */
const ownerQuery = (tenantId: string, sessionIds: readonly string[] | undefined): string => {
  const [tenant] = ownerTokens(tenantId, '').split(' ');
  if (sessionIds === undefined) return `${tenant}:A`;
  const sessions = sessionIds.map((id) => `${ownerTokens(tenantId, id).split(' ')[1]}:A`);
  return `${tenant}:A & (${sessions.join(' | ')})`;
};

/** A term's phrase query with each of its lexemes restricted to weight D (the indexed text). */
const bodyPhrase = (param: string): string =>
  `regexp_replace(phraseto_tsquery('simple', ${param})::text, '(''(?:[^'']|'''')*'')', '\\1:D', 'g')::tsquery`;

export const createPgEventSearch = (db: PgDatabase): EventSearch => ({
  async search(q: EventSearchQuery): Promise<EventHit[]> {
    const sessions = q.sessionIds?.slice(0, MAX_SEARCH_SESSIONS);
    if (sessions !== undefined && sessions.length === 0) return [];
    const terms = queryTerms(q.query);
    if (terms.length === 0 || q.limit <= 0) return [];
    const availability = new Set(q.availability ?? ['live', 'persisted']);
    if (availability.size === 0) return [];
    const params: unknown[] = [];
    const param = (value: unknown): string => {
      params.push(value);
      return `$${params.length}`;
    };
    const match = [
      `to_tsquery('simple', ${param(ownerQuery(q.tenantId, sessions))})`,
      ...terms.map((term) => bodyPhrase(param(searchWords(term)))),
    ].join(' && ');
    const tenant = param(q.tenantId);
    const where = [`m.search @@ (${match})`, `m.tenant_id = ${tenant}`];
    const sessionWhere = [`a.tenant_id = ${tenant}`];
    const range = (into: string[], column: string, from: number | undefined, to: number | undefined) => {
      if (from !== undefined) into.push(`${column} >= ${param(from)}`);
      if (to !== undefined) into.push(`${column} <= ${param(to)}`);
    };
    const among = (column: string, values: readonly string[] | undefined) => {
      if (values !== undefined) where.push(`${column} = ANY(${param(values)}::text[])`);
    };
    among('m.session_id', sessions);
    range(where, 'm.seq', q.seqFrom, q.seqTo);
    range(where, 'm.at', q.timeFrom, q.timeTo);
    among('m.type', q.types);
    among('m.surface', q.surfaces);
    range(sessionWhere, 'a.created_at', q.createdFrom, q.createdTo);
    if (!availability.has('live')) sessionWhere.push('a.deleted_at IS NOT NULL');
    if (!availability.has('persisted')) sessionWhere.push('a.deleted_at IS NULL');
    // The index's matches first, then their sessions (what FTS5's MATCH does on libsql): left to
    // itself the planner may walk every event of the tenant's sessions and test each tsvector, or
    // (with statistics) walk the primary key backwards testing every event for a rare word. The
    // matches come out sorted by id, newest first, in a subquery whose order the join keeps: a
    // nested loop then looks up the sessions of the newest matches only until the limit is met,
    // instead of joining every match (15k for a frequent word) before a top-N sort. The cost
    // left is the GIN scan and the heap visits that recheck each match (weights need the tsvector):
    // see bench/lib/pg-search-explain.ts.
    const sql = `WITH hits AS MATERIALIZED (
        SELECT m.id, m.session_id, m.seq, m.type, m.surface, m.at FROM event_index m
        WHERE ${where.join(' AND ')}
      )
      SELECT m.session_id, m.seq, m.type, m.surface, m.at
      FROM (SELECT * FROM hits ORDER BY id DESC) m JOIN agents a ON a.id = m.session_id AND ${sessionWhere.join(' AND ')}
      ORDER BY m.id DESC LIMIT ${param(Math.trunc(q.limit))}`;
    return pgGuarded('search the session log', async () => (await db.many<HitRow>(sql, params)).map(toHit));
  },

  session: (tenantId, id) =>
    pgGuarded('read a session', async (): Promise<SessionInfo | undefined> => {
      const row = await db.one<SessionRow>(
        `SELECT a.id, a.created_at, a.deleted_at, a.parent_id,
                coalesce((SELECT last_seq FROM sessions WHERE id = a.id), 0) AS last_seq
         FROM agents a WHERE a.id = $1 AND a.tenant_id = $2`,
        [id, tenantId],
      );
      return row === undefined ? undefined : toSessionInfo(row);
    }),

  async children(tenantId, parentIds) {
    const parents = parentIds.slice(0, MAX_SEARCH_SESSIONS);
    if (parents.length === 0) return [];
    return pgGuarded('list child sessions', async () =>
      (
        await db.many<{ id: string }>(
          `SELECT id FROM agents WHERE tenant_id = $1 AND parent_id = ANY($2::text[])
           ORDER BY created_at, rowid`,
          [tenantId, parents],
        )
      ).map((r) => r.id),
    );
  },

  count: (tenantId, id, type) =>
    pgGuarded('count session events', async () => {
      // Covered by event_index_session_type; the tenant is checked on the session's agent.
      const row = await db.one<{ n: number }>(
        `SELECT count(*) AS n FROM event_index
         WHERE session_id = $1 AND type = $2 AND EXISTS (SELECT 1 FROM agents WHERE id = $1 AND tenant_id = $3)`,
        [id, type, tenantId],
      );
      return row?.n ?? 0;
    }),
});
