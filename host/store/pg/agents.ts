// The agents repository on PostgreSQL: the AgentStore of ../agents-port.ts over the same `agents`
// rows as the libsql one (../agents.ts and its parts), so a dump means the same thing on both.
// Invariants, as on libsql: every read takes the tenant id, and another tenant's agent reads as
// absent (byId, listAll and withSandbox excepted, as there); deletion is a soft `deleted_at` stamp;
// an agent's remote tools and MCP servers are each one whole JSON list in one text column,
// replaced as one value; the `mcp_servers` column is sealed (../sealed.ts) and a value stored
// unsealed is read as it is; links are written only at creation; an agent of an unknown tenant is
// NOT_FOUND (the foreign key decides); lists come oldest first (created_at, then rowid).
// Where Postgres differs, and why:
// - Two replicas may write one row at once. Each write is one statement, and those that answer
//   true/false are conditional UPDATEs (`… AND deleted_at IS NULL`): the second waits for the
//   first's row lock and re-reads the row, so of two concurrent deletions exactly one answers
//   true, and no such update lands on a deleted agent. setSandboxId is unconditional, as on libsql
//   (re-adoption clears a deleted agent's sandbox).
// - withSandbox pages by id under COLLATE "C" (byte order, SQLite's BINARY): a database made with
//   a linguistic collation would otherwise order ids of mixed case and `-`/`_` differently.
// - The schema starts at migration 15 (baseline.ts), so no statement waits for a later column.
// - Values are serialised before the first await, so a caller changing what it passed while the
//   write is in flight changes nothing stored (libsql serialises synchronously too).
import { isSandboxError } from '../../errors.ts';
import type { AgentRecord, AgentStore, CreateAgentInput } from '../agents-port.ts';
import { type AgentRow, newAgent, noAgentTenant, pausedText, toRecord } from '../agents-rows.ts';
import type { Sealer } from '../sealed.ts';
import { type PgDatabase, pgGuarded } from './db.ts';

/** Every column of an agent but `rowid` (which orders rows and is no part of the record). */
const COLUMNS = `id, tenant_id, preset, mode, config, remote_tools, mcp_servers, sandbox_id, created_at,
  deleted_at, parent_id, team_id, name, role, depth, paused`;
const LIVE = 'deleted_at IS NULL';
const OLDEST_FIRST = 'ORDER BY created_at, rowid';
/** SQLSTATE foreign_key_violation: the only foreign key of `agents` is its tenant. */
const FOREIGN_KEY_VIOLATION = '23503';

/** What the store's functions share: the pool, the clock, and turning a row into a record. */
interface PgAgents {
  db: PgDatabase;
  now: () => number;
  read: (row: AgentRow) => AgentRecord;
}

/** The records of one SELECT of every column, in its order. */
const selectAgents = (state: PgAgents, operation: string, where: string, params: readonly unknown[]) =>
  pgGuarded(operation, async () =>
    (await state.db.many<AgentRow>(`SELECT ${COLUMNS} FROM agents ${where}`, params)).map(state.read),
  );

const selectAgent = async (state: PgAgents, operation: string, where: string, params: readonly unknown[]) =>
  (await selectAgents(state, operation, where, params))[0];

/** Whether one conditional UPDATE changed a row. */
const updateAgent = (db: PgDatabase, operation: string, sql: string, params: readonly unknown[]) =>
  pgGuarded(operation, async () => (await db.query(sql, params)).rowCount > 0);

async function createAgent(state: PgAgents, input: CreateAgentInput): Promise<AgentRecord> {
  const { record: created, config, remoteTools } = newAgent(input, state.now());
  const links = input.links;
  try {
    // One statement for both kinds: an agent without links gets the columns' defaults
    // (no parent, team, name or role; depth 0), as libsql's shorter INSERT leaves them.
    await state.db.query(
      `INSERT INTO agents (id, tenant_id, preset, mode, config, remote_tools, created_at,
         parent_id, team_id, name, role, depth) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      [
        created.id,
        created.tenantId,
        created.preset,
        created.mode,
        config,
        remoteTools,
        created.createdAt,
        links?.parentId ?? null,
        links?.teamId ?? null,
        links?.name ?? null,
        links?.role ?? null,
        links?.depth ?? 0,
      ],
    );
  } catch (error) {
    if (isSandboxError(error) && error.data?.pgCode === FOREIGN_KEY_VIOLATION) {
      throw noAgentTenant(input.tenantId, error.cause ?? error);
    }
    throw error;
  }
  return created;
}

export const createPgAgentStore = (
  db: PgDatabase,
  now: () => number = Date.now,
  sealer?: Sealer,
): AgentStore => {
  const open = (stored: string) => sealer?.open(stored) ?? stored;
  const state: PgAgents = { db, now, read: (row) => toRecord(row, open) };
  const records = (operation: string, where: string, params: readonly unknown[]) =>
    selectAgents(state, operation, where, params);
  const record = (operation: string, where: string, params: readonly unknown[]) =>
    selectAgent(state, operation, where, params);
  const updated = (operation: string, sql: string, params: readonly unknown[]) =>
    updateAgent(db, operation, sql, params);

  return {
    create: (input) => createAgent(state, input),

    get: (tenantId, id) =>
      record('read agent', `WHERE id = $1 AND tenant_id = $2 AND ${LIVE}`, [id, tenantId]),

    isLive: (tenantId, id) =>
      pgGuarded(
        'read agent',
        async () =>
          (await db.one(`SELECT 1 AS live FROM agents WHERE id = $1 AND tenant_id = $2 AND ${LIVE}`, [
            id,
            tenantId,
          ])) !== undefined,
      ),

    list: (tenantId) =>
      records('list agents', `WHERE tenant_id = $1 AND ${LIVE} ${OLDEST_FIRST}`, [tenantId]),

    markDeleted: (tenantId, id) =>
      updated(
        'delete agent',
        `UPDATE agents SET deleted_at = $1 WHERE id = $2 AND tenant_id = $3 AND ${LIVE}`,
        [now(), id, tenantId],
      ),

    setRemoteTools(tenantId, id, tools) {
      const text = JSON.stringify(tools);
      return updated(
        'set agent remote tools',
        `UPDATE agents SET remote_tools = $1 WHERE id = $2 AND tenant_id = $3 AND ${LIVE}`,
        [text, id, tenantId],
      );
    },

    setMcpServers(tenantId, id, servers) {
      const text = JSON.stringify(servers);
      return updated(
        'set agent MCP servers',
        `UPDATE agents SET mcp_servers = $1 WHERE id = $2 AND tenant_id = $3 AND ${LIVE}`,
        [sealer?.seal(text) ?? text, id, tenantId],
      );
    },

    setPaused: (tenantId, id, paused) =>
      updated(
        'set agent paused',
        `UPDATE agents SET paused = $1 WHERE id = $2 AND tenant_id = $3 AND ${LIVE}`,
        [pausedText(paused), id, tenantId],
      ),

    async setSandboxId(id, sandboxId) {
      await pgGuarded('set agent sandbox', () =>
        db.query('UPDATE agents SET sandbox_id = $1 WHERE id = $2', [sandboxId ?? null, id]),
      );
    },

    listAll: (options = {}) =>
      records('list all agents', `${options.includeDeleted ? '' : `WHERE ${LIVE}`} ${OLDEST_FIRST}`, []),

    withSandbox: (after, limit) =>
      records(
        'list agents with sandboxes',
        `WHERE id COLLATE "C" > $1 AND sandbox_id IS NOT NULL AND ${LIVE} ORDER BY id COLLATE "C" LIMIT $2`,
        [after, limit],
      ),

    byId: (id) => record('read agent', `WHERE id = $1 AND ${LIVE}`, [id]),

    children: (tenantId, parentId) =>
      records('list child agents', `WHERE parent_id = $1 AND tenant_id = $2 AND ${LIVE} ${OLDEST_FIRST}`, [
        parentId,
        tenantId,
      ]),

    teammates: (tenantId, teamId) =>
      records('list teammates', `WHERE team_id = $1 AND tenant_id = $2 AND ${LIVE} ${OLDEST_FIRST}`, [
        teamId,
        tenantId,
      ]),
  };
};
