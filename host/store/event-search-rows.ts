// The rows both backends of the EventSearch answer from: a search hit (an `event_index` row) and a
// session (its agent's row with the session's last seq), each read into what the port returns,
// and how many sessions one query may name. One module, so the libsql (event-search.ts) and
// PostgreSQL (pg/event-search.ts) backends answer alike; each keeps only its SQL (FTS5 there,
// tsvector here). Imports no backend.
import type { EventHit, SessionAvailability, SessionInfo } from './types.ts';

/** Most sessions one query may name. */
export const MAX_SEARCH_SESSIONS = 100;

/** An `event_index` row a search matched. */
export interface HitRow {
  session_id: string;
  seq: number;
  type: string;
  surface: EventHit['surface'];
  at: number;
}

export const toHit = (r: HitRow): EventHit => ({
  sessionId: r.session_id,
  seq: r.seq,
  type: r.type,
  surface: r.surface,
  at: r.at,
});

/** A session as session() reads it: its agent's row and the session's last seq (0 before any). */
export interface SessionRow {
  id: string;
  created_at: number;
  deleted_at: number | null;
  parent_id: string | null;
  last_seq: number;
}

const availabilityOf = (deletedAt: number | null): SessionAvailability =>
  deletedAt === null ? 'live' : 'persisted';

export const toSessionInfo = (row: SessionRow): SessionInfo => ({
  id: row.id,
  createdAt: row.created_at,
  availability: availabilityOf(row.deleted_at),
  ...(row.parent_id === null ? {} : { parentId: row.parent_id }),
  lastSeq: row.last_seq,
});
