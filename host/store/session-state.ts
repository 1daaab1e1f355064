// The durable state of a session besides its log (migration 6): its todo list, whether it is in
// plan mode, and its current goal. The store keeps the values as JSON and decides nothing about
// them (host/session/ does). Invariants: a field never written reads as absent, so its
// owner applies its own default (plan mode: the agent's policy at creation); a write replaces one
// field whole and leaves the others. The port is asynchronous (a network backend fits it); the
// libsql implementation answers from synchronous prepared statements.
import type { JsonValue } from '../json.ts';
import { type Database, guarded } from './db.ts';

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

interface Row {
  todos: string | null;
  plan_mode: number | null;
  goal: string | null;
}

export const createSessionStateStore = (db: Database, now: () => number = Date.now): SessionStateStore => {
  const select = db.prepare('SELECT todos, plan_mode, goal FROM session_state WHERE session_id = ?');
  const upsert = (column: string) =>
    db.prepare(
      `INSERT INTO session_state (session_id, ${column}, updated_at) VALUES (?, ?, ?)
       ON CONFLICT(session_id) DO UPDATE SET ${column} = excluded.${column}, updated_at = excluded.updated_at`,
    );
  const upserts = { todos: upsert('todos'), planMode: upsert('plan_mode'), goal: upsert('goal') };

  return {
    get: async (sessionId) =>
      guarded('read session state', () => {
        const row = select.all(sessionId)[0] as Row | undefined;
        const record: SessionStateRecord = {};
        if (row?.todos != null) record.todos = JSON.parse(row.todos);
        if (row?.plan_mode != null) record.planMode = row.plan_mode === 1;
        if (row?.goal != null) record.goal = JSON.parse(row.goal);
        return record;
      }),
    set: async (sessionId, fields) =>
      guarded('write session state', () => {
        const at = now();
        if (fields.todos !== undefined) upserts.todos.run(sessionId, JSON.stringify(fields.todos), at);
        if (fields.planMode !== undefined) upserts.planMode.run(sessionId, fields.planMode ? 1 : 0, at);
        if (fields.goal !== undefined) upserts.goal.run(sessionId, JSON.stringify(fields.goal), at);
      }),
  };
};

/** The in-memory double (unit tests, and services built without a durable store): JSON copies in a Map. */
export const createMemorySessionStateStore = (): SessionStateStore => {
  const rows = new Map<string, string>();
  return {
    get: async (sessionId) => JSON.parse(rows.get(sessionId) ?? '{}'),
    async set(sessionId, fields) {
      const current = JSON.parse(rows.get(sessionId) ?? '{}');
      rows.set(sessionId, JSON.stringify({ ...current, ...fields }));
    },
  };
};
