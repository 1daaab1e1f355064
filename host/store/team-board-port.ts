// The TeamBoardStore port: team task boards as every backend keeps them (libsql: team-board.ts,
// PostgreSQL: pg/team-board.ts, their shared rows: team-board-rows.ts). Types only.

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
