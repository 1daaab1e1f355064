// The `session_state` row as both backends of the SessionStateStore read and write it: the row
// type, row → record (a field never written reads as absent), and the columns a write of some
// fields sets, with their stored values (JSON as text, plan_mode as 0/1). One module, so the
// libsql (session-state.ts) and PostgreSQL (pg/session-state.ts) backends mean the same by every
// column; each keeps only its SQL. Imports no backend.
import type { SessionStateRecord } from './session-state-port.ts';

export interface SessionStateRow {
  todos: string | null;
  plan_mode: number | null;
  goal: string | null;
}

export const toSessionState = (row: SessionStateRow | undefined): SessionStateRecord => {
  const record: SessionStateRecord = {};
  if (row?.todos != null) record.todos = JSON.parse(row.todos);
  if (row?.plan_mode != null) record.planMode = row.plan_mode === 1;
  if (row?.goal != null) record.goal = JSON.parse(row.goal);
  return record;
};

export type SessionStateColumn = 'todos' | 'plan_mode' | 'goal';

/**
 * The columns the given fields are stored in, with the values they store, in a fixed order (so a
 * column name never comes from the caller). Values are serialised here, at the call.
 */
export const sessionStateColumns = (fields: SessionStateRecord): [SessionStateColumn, string | number][] => {
  const columns: [SessionStateColumn, string | number][] = [];
  if (fields.todos !== undefined) columns.push(['todos', JSON.stringify(fields.todos)]);
  if (fields.planMode !== undefined) columns.push(['plan_mode', fields.planMode ? 1 : 0]);
  if (fields.goal !== undefined) columns.push(['goal', JSON.stringify(fields.goal)]);
  return columns;
};
