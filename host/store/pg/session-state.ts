// A session's durable state besides its log (todos, plan mode, goal) on PostgreSQL: the
// SessionStateStore of ../session-state.ts over the same `session_state` rows (JSON as text,
// plan_mode as 0/1, updated_at in epoch ms). The store decides nothing about the values.
// Invariants, as on libsql: a field never written reads as absent; a write replaces the fields it
// names, each whole, and leaves the others; values are serialised before the first await, so what
// is stored is a copy of what was given at the call.
// Where Postgres differs, and why: libsql runs one upsert per field; here the fields given go in
// ONE upsert (the SET list names only them), one round trip, and a reader on another replica never
// sees half of one write. Two concurrent writes of different fields both land (the upsert locks
// the row; the second updates the row the first left), as they do on libsql.
import type { SessionStateStore } from '../session-state-port.ts';
import { type SessionStateRow, sessionStateColumns, toSessionState } from '../session-state-rows.ts';
import { type PgDatabase, pgGuarded } from './db.ts';

export const createPgSessionStateStore = (
  db: PgDatabase,
  now: () => number = Date.now,
): SessionStateStore => ({
  get: (sessionId) =>
    pgGuarded('read session state', async () => {
      const row = await db.one<SessionStateRow>(
        'SELECT todos, plan_mode, goal FROM session_state WHERE session_id = $1',
        [sessionId],
      );
      return toSessionState(row);
    }),

  async set(sessionId, fields) {
    // Column names come from a fixed list (session-state-rows.ts), never from the caller; the values
    // are parameters.
    const given = sessionStateColumns(fields);
    if (given.length === 0) return;
    const columns: string[] = [...given.map(([column]) => column), 'updated_at'];
    const values: unknown[] = [...given.map(([, value]) => value), now()];
    const params = columns.map((_, i) => `$${i + 2}`).join(', ');
    const updates = columns.map((column) => `${column} = excluded.${column}`).join(', ');
    await pgGuarded('write session state', () =>
      db.query(
        `INSERT INTO session_state (session_id, ${columns.join(', ')}) VALUES ($1, ${params})
         ON CONFLICT (session_id) DO UPDATE SET ${updates}`,
        [sessionId, ...values],
      ),
    );
  },
});
