// The SessionStateStore port: a session's durable state besides its log as every backend keeps it
// (libsql and the in-memory double: session-state.ts, PostgreSQL: pg/session-state.ts, the row
// both SQL backends share: session-state-rows.ts). Types only.
import type { JsonValue } from '../json.ts';

/** One session's state; each field absent until it was first written. */
export interface SessionStateRecord {
  todos?: JsonValue;
  planMode?: boolean;
  goal?: JsonValue;
}

export interface SessionStateStore {
  get(sessionId: string): Promise<SessionStateRecord>;
  /** Writes the fields given (each replaced whole), in one statement per field. */
  set(sessionId: string, fields: SessionStateRecord): Promise<void>;
}
