// Team task boards on PostgreSQL: the TeamBoardStore of ../team-board.ts over the same rows
// (`team_tasks`, the id counter in `team_boards`, the grants in `team_write_grants`), with its
// invariants: every read and write takes the tenant and the team; a write's revision check, cycle
// check and the change they allow commit together, so two replicas cannot both claim a task; task
// ids are the board's sequence numbers, gap-free and never reused once a write that drew them
// committed.
// Where Postgres differs, and why: libsql runs `write`'s synchronous function over statements
// inside BEGIN IMMEDIATE (one writer for the whole file). Here the function cannot wait for a query,
// so `write` loads the board first and runs the function over that copy:
//   1. lock the board's counter row: INSERT … ON CONFLICT DO NOTHING (the row is new: this
//      transaction holds it) or else SELECT … FOR UPDATE. Every write of one board queues on that
//      row, across replicas; writes of other boards do not;
//   2. read the board's tasks and the tenant's grants (a grant belongs to the tenant, and the
//      function may ask for anyone's);
//   3. run the function over the copy (board-copy.ts), which sees its own changes;
//   4. write what it changed (tasks inserted, updated, removed; the counter; grants set) and COMMIT.
//      A throwing function writes nothing (ROLLBACK), and the ids it drew are drawn again.
// A board row this write inserted but drew no id from is deleted again before COMMIT, so the rows
// are libsql's (which makes the row at the first id drawn). Grants are read without a lock: a grant
// is changed only by a write on the board of its agent's team, which the board lock serialises.
// scopedHeldBy orders by team_id COLLATE "C", SQLite's byte order, whatever the database's collation.
import type { TeamBoardStore, TeamTaskRecord } from '../team-board-port.ts';
import { grantScopes, type TaskRow, taskColumns, toTaskRecord } from '../team-board-rows.ts';
import { type BoardChanges, createBoardCopy } from './board-copy.ts';
import { type PgDatabase, type PgQueries, pgGuarded } from './db.ts';

const TASK =
  'seq, subject, description, status, owner, blocked_by, write_scopes, revision, created_by, created_at, updated_at';

/** A task's row values after (tenant_id, team_id, seq), in TASK's order. */
const valuesOf = (t: TeamTaskRecord): unknown[] => [...taskColumns(t), t.createdBy, t.createdAt, t.updatedAt];

const readTasks = async (q: PgQueries, tenantId: string, teamId: string): Promise<TeamTaskRecord[]> =>
  (
    await q.many<TaskRow>(
      `SELECT ${TASK} FROM team_tasks WHERE tenant_id = $1 AND team_id = $2 ORDER BY seq`,
      [tenantId, teamId],
    )
  ).map(toTaskRecord);

/** Locks the board's counter row (making it when missing); its next_seq and whether it was made. */
const lockBoard = async (
  q: PgQueries,
  tenantId: string,
  teamId: string,
): Promise<{ nextSeq: number; made: boolean }> => {
  const made = await q.one<{ next_seq: number }>(
    `INSERT INTO team_boards (tenant_id, team_id, next_seq) VALUES ($1, $2, 1)
     ON CONFLICT (tenant_id, team_id) DO NOTHING RETURNING next_seq`,
    [tenantId, teamId],
  );
  if (made !== undefined) return { nextSeq: made.next_seq, made: true };
  const row = await q.one<{ next_seq: number }>(
    'SELECT next_seq FROM team_boards WHERE tenant_id = $1 AND team_id = $2 FOR UPDATE',
    [tenantId, teamId],
  );
  // The INSERT met a committed row, and only the transaction that made a row deletes it (before its
  // COMMIT): the row is there. Should it not be, trying again makes it.
  if (row === undefined) return lockBoard(q, tenantId, teamId);
  return { nextSeq: row.next_seq, made: false };
};

/** Writes what the function changed, inside its transaction. */
const apply = async (
  q: PgQueries,
  tenantId: string,
  teamId: string,
  board: { nextSeq: number; made: boolean },
  changes: BoardChanges,
): Promise<void> => {
  const key = [tenantId, teamId];
  if (changes.removed.length > 0) {
    await q.query(
      'DELETE FROM team_tasks WHERE tenant_id = $1 AND team_id = $2 AND seq = ANY($3::bigint[])',
      [...key, changes.removed],
    );
  }
  if (changes.inserted.length > 0) {
    // One statement for every new task: 13 parameters a row.
    const params: unknown[] = [];
    const rows = changes.inserted.map((t) => {
      const at = params.length;
      params.push(...key, Number(t.id), ...valuesOf(t));
      return `(${Array.from({ length: 13 }, (_, i) => `$${at + i + 1}`).join(', ')})`;
    });
    await q.query(`INSERT INTO team_tasks (tenant_id, team_id, ${TASK}) VALUES ${rows.join(', ')}`, params);
  }
  for (const t of changes.updated) {
    await q.query(
      `UPDATE team_tasks SET subject = $4, description = $5, status = $6, owner = $7, blocked_by = $8,
       write_scopes = $9, revision = $10, created_by = $11, created_at = $12, updated_at = $13
       WHERE tenant_id = $1 AND team_id = $2 AND seq = $3`,
      [...key, Number(t.id), ...valuesOf(t)],
    );
  }
  if (changes.nextSeq !== board.nextSeq) {
    await q.query('UPDATE team_boards SET next_seq = $3 WHERE tenant_id = $1 AND team_id = $2', [
      ...key,
      changes.nextSeq,
    ]);
  } else if (board.made) {
    await q.query('DELETE FROM team_boards WHERE tenant_id = $1 AND team_id = $2', key);
  }
  // In agent id order: two writes of one tenant that set the same grants lock their rows alike.
  for (const [agentId, scopes] of [...changes.grants].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    await q.query(
      `INSERT INTO team_write_grants (tenant_id, agent_id, scopes, updated_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (tenant_id, agent_id) DO UPDATE SET scopes = excluded.scopes, updated_at = excluded.updated_at`,
      [tenantId, agentId, JSON.stringify(scopes), Date.now()],
    );
  }
};

export const createPgTeamBoardStore = (db: PgDatabase): TeamBoardStore => {
  const grantOf = async (q: PgQueries, tenantId: string, agentId: string) => {
    const row = await q.one<{ scopes: string }>(
      'SELECT scopes FROM team_write_grants WHERE tenant_id = $1 AND agent_id = $2',
      [tenantId, agentId],
    );
    return row === undefined ? undefined : grantScopes(row.scopes);
  };

  return {
    write: (tenantId, teamId, fn) =>
      pgGuarded('change a team task board', () =>
        db.tx(async (tx) => {
          const board = await lockBoard(tx, tenantId, teamId);
          const tasks = await readTasks(tx, tenantId, teamId);
          const grants = await tx.many<{ agent_id: string; scopes: string }>(
            'SELECT agent_id, scopes FROM team_write_grants WHERE tenant_id = $1',
            [tenantId],
          );
          const copy = createBoardCopy(
            tasks,
            board.nextSeq,
            new Map(grants.map((g) => [g.agent_id, grantScopes(g.scopes)])),
          );
          const result = fn(copy.tx);
          await apply(tx, tenantId, teamId, board, copy.changes());
          return result;
        }),
      ),

    tasks: (tenantId, teamId) => pgGuarded('read a team task board', () => readTasks(db, tenantId, teamId)),

    scopedHeldBy: (tenantId, owner) =>
      pgGuarded('read held team tasks', async () =>
        (
          await db.many<TaskRow>(
            `SELECT ${TASK} FROM team_tasks WHERE tenant_id = $1 AND owner = $2 AND status = 'in_progress'
             AND write_scopes != '[]' ORDER BY team_id COLLATE "C", seq`,
            [tenantId, owner],
          )
        ).map(toTaskRecord),
      ),

    grantOf: (tenantId, agentId) => pgGuarded('read a write grant', () => grantOf(db, tenantId, agentId)),

    boardsOwning: (owner) =>
      pgGuarded('read held team tasks', async () =>
        (
          await db.many<{ tenant_id: string; team_id: string }>(
            `SELECT DISTINCT tenant_id, team_id FROM team_tasks WHERE owner = $1 AND status != 'completed'`,
            [owner],
          )
        ).map((r) => ({ tenantId: r.tenant_id, teamId: r.team_id })),
      ),
  };
};
