// What the parts of the libsql agents repository (agents.ts) share: its prepared statements, the
// clock, the sealer, and turning a row into an AgentRecord (agents-rows.ts's, shared with Postgres).
// Invariants: statements for columns a later migration added (mcp_servers: migration 8; links:
// migration 10) are prepared at first use, so a store on an older schema (migration tests) still
// opens; the mcp_servers column is sealed (sealed.ts), since MCP servers' environments and headers
// are secrets. `live` remembers agents a read found live (isLive, agents-read.ts): on libsql the
// agents table is one process's (replicas need PostgreSQL; the command line never deletes an
// agent), and an agent stops being live only through markDeleted here, which forgets it first, so
// a remembered answer is the table's. It saves every batch a read on the service's thread whose
// first statement after the log's writer thread committed costs ~0.16 ms of waiting
// (bench/http-latency.ts, issue 33); at most LIVE_REMEMBERED are kept, the oldest forgotten.
import type LibsqlDatabase from 'libsql';
import type { AgentRecord } from './agents-port.ts';
import { type AgentRow, toRecord } from './agents-rows.ts';
import type { Database } from './db.ts';
import type { Sealer } from './sealed.ts';

export interface AgentsState {
  readonly db: Database;
  readonly now: () => number;
  readonly sealer: Sealer | undefined;
  readonly read: (row: AgentRow) => AgentRecord;
  readonly insert: LibsqlDatabase.Statement;
  readonly selectById: LibsqlDatabase.Statement;
  readonly select: LibsqlDatabase.Statement;
  readonly selectLiveOne: LibsqlDatabase.Statement;
  readonly selectTenant: LibsqlDatabase.Statement;
  readonly selectLive: LibsqlDatabase.Statement;
  readonly selectAll: LibsqlDatabase.Statement;
  readonly remove: LibsqlDatabase.Statement;
  readonly setRemote: LibsqlDatabase.Statement;
  readonly setSandbox: LibsqlDatabase.Statement;
  readonly setPaused: LibsqlDatabase.Statement;
  // Prepared at first use (see the header).
  insertLinked: LibsqlDatabase.Statement | undefined;
  selectChildren: LibsqlDatabase.Statement | undefined;
  selectTeam: LibsqlDatabase.Statement | undefined;
  setMcp: LibsqlDatabase.Statement | undefined;
  selectWithSandbox: LibsqlDatabase.Statement | undefined;
  /** Agents a read found live, `tenant\0id`, oldest first (see the header). */
  readonly live: Set<string>;
}

/** How many live agents the state remembers (a Set's insertion order: the oldest goes first). */
export const LIVE_REMEMBERED = 10_000;

export function prepareAgents(db: Database, now: () => number, sealer: Sealer | undefined): AgentsState {
  const open = (stored: string) => sealer?.open(stored) ?? stored;
  return {
    db,
    now,
    sealer,
    read: (row: AgentRow) => toRecord(row, open),
    insert: db.prepare(
      'INSERT INTO agents (id, tenant_id, preset, mode, config, remote_tools, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    selectById: db.prepare('SELECT * FROM agents WHERE id = ? AND deleted_at IS NULL'),
    select: db.prepare('SELECT * FROM agents WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL'),
    selectLiveOne: db.prepare(
      'SELECT 1 AS live FROM agents WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL',
    ),
    selectTenant: db.prepare(
      'SELECT * FROM agents WHERE tenant_id = ? AND deleted_at IS NULL ORDER BY created_at, rowid',
    ),
    selectLive: db.prepare('SELECT * FROM agents WHERE deleted_at IS NULL ORDER BY created_at, rowid'),
    selectAll: db.prepare('SELECT * FROM agents ORDER BY created_at, rowid'),
    remove: db.prepare(
      'UPDATE agents SET deleted_at = ? WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL',
    ),
    setRemote: db.prepare(
      'UPDATE agents SET remote_tools = ? WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL',
    ),
    setSandbox: db.prepare('UPDATE agents SET sandbox_id = ? WHERE id = ?'),
    setPaused: db.prepare(
      'UPDATE agents SET paused = ? WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL',
    ),
    insertLinked: undefined,
    selectChildren: undefined,
    selectTeam: undefined,
    setMcp: undefined,
    selectWithSandbox: undefined,
    live: new Set(),
  };
}
