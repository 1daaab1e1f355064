// The rows of team task boards (`team_tasks`, `team_write_grants`) as both backends of the
// TeamBoardStore read and write them: the task row type, row → record, a task's changeable column
// values and a grant's stored scopes. One module, so the libsql (team-board.ts) and PostgreSQL
// (pg/team-board.ts) backends mean the same by every column; each keeps only its SQL and its
// transaction. Imports no backend.
import type { TeamTaskRecord, TeamTaskStatus } from './team-board-port.ts';

export interface TaskRow {
  seq: number;
  subject: string;
  description: string;
  status: TeamTaskStatus;
  owner: string | null;
  blocked_by: string;
  write_scopes: string;
  revision: number;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export const toTaskRecord = (r: TaskRow): TeamTaskRecord => ({
  id: String(r.seq),
  subject: r.subject,
  description: r.description,
  status: r.status,
  ...(r.owner === null ? {} : { owner: r.owner }),
  blockedBy: JSON.parse(r.blocked_by),
  writeScopes: JSON.parse(r.write_scopes),
  revision: r.revision,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/**
 * The values of the columns a change may write, in this order: subject, description, status,
 * owner, blocked_by, write_scopes, revision.
 */
export const taskColumns = (t: TeamTaskRecord) =>
  [
    t.subject,
    t.description,
    t.status,
    t.owner ?? null,
    JSON.stringify(t.blockedBy),
    JSON.stringify(t.writeScopes),
    t.revision,
  ] as const;

/** A grant's `scopes` column as the list it stores. */
export const grantScopes = (stored: string): string[] => JSON.parse(stored) as string[];
