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
import { type Database, guarded, immediate } from './db.ts';
import { grantScopes, type TaskRow, taskColumns, toTaskRecord } from './team-board-rows.ts';

export type TeamTaskStatus = 'pending' | 'in_progress' | 'completed';

export interface TeamTaskRecord {
  /** The board's sequence number as a string ("1", "2", …): short, so a model copies it right. */
  id: string;
  subject: string;
  description: string;
  status: TeamTaskStatus;
  /** The agent id holding (in_progress) or reserved for (pending) the task. */
  owner?: string;
  /** Ids of tasks of the same board that must be completed first. */
  blockedBy: string[];
  /** Normalised workspace-relative paths or globs its owner's writes are confined to. */
  writeScopes: string[];
  /** 1 at creation, +1 per change. */
  revision: number;
  createdBy: string;
  createdAt: number;
  updatedAt: number;
}

/** What `write`'s function may do to one board: synchronous, inside the write transaction. */
export interface TeamBoardTx {
  /** Every task of the board, in id order. */
  tasks(): TeamTaskRecord[];
  /** A fresh id of this board (never handed out before). */
  nextId(): string;
  insert(task: TeamTaskRecord): void;
  update(task: TeamTaskRecord): void;
  remove(id: string): void;
  /** The write grant of `agentId` (its normalised scopes); undefined when it has none. */
  grantOf(agentId: string): string[] | undefined;
  /** Stores the write grant of `agentId` (of this board's tenant). */
  setGrant(agentId: string, scopes: readonly string[]): void;
}

/**
 * Every method is asynchronous, so a network database can back it; `write`'s function is not.
 */
export interface TeamBoardStore {
  /**
   * Runs `fn` over one team's board in one write transaction and resolves with what it returned;
   * what it throws rolls the transaction back and rejects. `fn` is synchronous and must stay so:
   * it may not await anything, the transaction is not held across an await. A backend may run it
   * over statements inside its transaction (libsql: BEGIN IMMEDIATE, as here) or load the board
   * first under a row lock (its tasks, its id counter, the grants `fn` asks for), run `fn` over
   * that copy and apply the changes it made before committing (PostgreSQL: SELECT … FOR UPDATE).
   */
  write<T>(tenantId: string, teamId: string, fn: (tx: TeamBoardTx) => T): Promise<T>;
  /** Every task of the board, in id order. */
  tasks(tenantId: string, teamId: string): Promise<TeamTaskRecord[]>;
  /** The in-progress tasks `owner` holds that have write scopes, on any board of the tenant. */
  scopedHeldBy(tenantId: string, owner: string): Promise<TeamTaskRecord[]>;
  /** The write grant of `agentId` in `tenantId`; undefined when it has none. */
  grantOf(tenantId: string, agentId: string): Promise<string[] | undefined>;
  /** The boards (of any tenant) where `owner` holds or is reserved unfinished tasks. */
  boardsOwning(owner: string): Promise<{ tenantId: string; teamId: string }[]>;
}

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
