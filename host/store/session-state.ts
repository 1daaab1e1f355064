// The durable state of a session besides its log (migration 6): its todo list, whether it is in
// plan mode, and its current goal. The store keeps the values as JSON and decides nothing about
// them (host/session/ does). Invariants: a field never written reads as absent, so its
// owner applies its own default (plan mode: the agent's policy at creation); a write replaces one
// field whole and leaves the others. The port is asynchronous (a network backend fits it); the
// libsql implementation answers from synchronous prepared statements.
// The port's types are in session-state-port.ts (re-exported here); the row in session-state-rows.ts.
import { type Database, guarded } from './db.ts';
import type { SessionStateStore } from './session-state-port.ts';
import { type SessionStateRow, sessionStateColumns, toSessionState } from './session-state-rows.ts';

export type { SessionStateRecord, SessionStateStore } from './session-state-port.ts';

export const createSessionStateStore = (db: Database, now: () => number = Date.now): SessionStateStore => {
  const select = db.prepare('SELECT todos, plan_mode, goal FROM session_state WHERE session_id = ?');
  const upsert = (column: string) =>
    db.prepare(
      `INSERT INTO session_state (session_id, ${column}, updated_at) VALUES (?, ?, ?)
       ON CONFLICT(session_id) DO UPDATE SET ${column} = excluded.${column}, updated_at = excluded.updated_at`,
    );
  const upserts = { todos: upsert('todos'), plan_mode: upsert('plan_mode'), goal: upsert('goal') };

  return {
    get: async (sessionId) =>
      guarded('read session state', () => {
        return toSessionState(select.all(sessionId)[0] as SessionStateRow | undefined);
      }),
    set: async (sessionId, fields) =>
      guarded('write session state', () => {
        const at = now();
        for (const [column, value] of sessionStateColumns(fields)) upserts[column].run(sessionId, value, at);
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
