// Team task boards (issue 16): the rows of each team's board in `team_tasks`, the id counter of
// each board in `team_boards` (migration 11), and each teammate's write grant in
// `team_write_grants` (migration 15). The store keeps rows and decides nothing: what an action may
// do, and what it grants, is host/teams/board/rules.ts's and grants.ts's business, run
// inside `write`.
// Invariants: every read and write takes the tenant and the team, so nobody reaches another
// tenant's board; `write` runs its (synchronous) function in one BEGIN IMMEDIATE transaction, so a
// revision check, a cycle check and the change they allow commit together (two processes sharing
// the file cannot both claim a task); task ids are the board's sequence numbers, never reused.
// The port is asynchronous; this libsql implementation runs its statements synchronously inside
// each method and resolves with the result.
// The port's types are in team-board-port.ts (re-exported here); the rows both backends share in
// team-board-rows.ts.
import { type Database, guarded, immediate } from './db.ts';
import type { TeamBoardStore, TeamBoardTx, TeamTaskRecord } from './team-board-port.ts';
import { grantScopes, type TaskRow, taskColumns, toTaskRecord } from './team-board-rows.ts';

export type { TeamBoardStore, TeamBoardTx, TeamTaskRecord, TeamTaskStatus } from './team-board-port.ts';

export const createTeamBoardStore = (db: Database): TeamBoardStore => {
  const select = db.prepare('SELECT * FROM team_tasks WHERE tenant_id = ? AND team_id = ? ORDER BY seq');
  const held = db.prepare(
    `SELECT * FROM team_tasks WHERE tenant_id = ? AND owner = ? AND status = 'in_progress'
     AND write_scopes != '[]' ORDER BY team_id, seq`,
  );
  const counter = db.prepare(
    `INSERT INTO team_boards (tenant_id, team_id, next_seq) VALUES (?, ?, 2)
     ON CONFLICT (tenant_id, team_id) DO UPDATE SET next_seq = next_seq + 1 RETURNING next_seq - 1 AS seq`,
  );
  const insert = db.prepare(
    `INSERT INTO team_tasks (tenant_id, team_id, seq, subject, description, status, owner, blocked_by,
     write_scopes, revision, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const update = db.prepare(
    `UPDATE team_tasks SET subject = ?, description = ?, status = ?, owner = ?, blocked_by = ?,
     write_scopes = ?, revision = ?, updated_at = ? WHERE tenant_id = ? AND team_id = ? AND seq = ?`,
  );
  const remove = db.prepare('DELETE FROM team_tasks WHERE tenant_id = ? AND team_id = ? AND seq = ?');
  const selectGrant = db.prepare('SELECT scopes FROM team_write_grants WHERE tenant_id = ? AND agent_id = ?');
  const upsertGrant = db.prepare(
    `INSERT INTO team_write_grants (tenant_id, agent_id, scopes, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (tenant_id, agent_id) DO UPDATE SET scopes = excluded.scopes, updated_at = excluded.updated_at`,
  );
  const readGrant = (tenantId: string, agentId: string): string[] | undefined => {
    const row = selectGrant.all(tenantId, agentId)[0] as { scopes: string } | undefined;
    return row === undefined ? undefined : grantScopes(row.scopes);
  };
  const owning = db.prepare(
    `SELECT DISTINCT tenant_id AS tenantId, team_id AS teamId FROM team_tasks
     WHERE owner = ? AND status != 'completed'`,
  );

  const read = (tenantId: string, teamId: string): TeamTaskRecord[] =>
    (select.all(tenantId, teamId) as TaskRow[]).map(toTaskRecord);

  function txOf(tenantId: string, teamId: string): TeamBoardTx {
    return {
      tasks: () => read(tenantId, teamId),
      nextId: () => String((counter.all(tenantId, teamId)[0] as { seq: number }).seq),
      insert: (t) =>
        void insert.run(
          tenantId,
          teamId,
          Number(t.id),
          ...taskColumns(t),
          t.createdBy,
          t.createdAt,
          t.updatedAt,
        ),
      update: (t) => void update.run(...taskColumns(t), t.updatedAt, tenantId, teamId, Number(t.id)),
      remove: (id) => void remove.run(tenantId, teamId, Number(id)),
      grantOf: (agentId) => readGrant(tenantId, agentId),
      setGrant: (agentId, scopes) =>
        void upsertGrant.run(tenantId, agentId, JSON.stringify(scopes), Date.now()),
    };
  }

  return {
    write: async (tenantId, teamId, fn) =>
      guarded('change a team task board', () => immediate(db, () => fn(txOf(tenantId, teamId)))),
    tasks: async (tenantId, teamId) => guarded('read a team task board', () => read(tenantId, teamId)),
    scopedHeldBy: async (tenantId, owner) =>
      guarded('read held team tasks', () => (held.all(tenantId, owner) as TaskRow[]).map(toTaskRecord)),
    grantOf: async (tenantId, agentId) => guarded('read a write grant', () => readGrant(tenantId, agentId)),
    boardsOwning: async (owner) =>
      guarded('read held team tasks', () =>
        (owning.all(owner) as { tenantId: string; teamId: string }[]).map(({ tenantId, teamId }) => ({
          tenantId,
          teamId,
        })),
      ),
  };
};
