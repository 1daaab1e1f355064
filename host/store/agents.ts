// The agents repository. Invariants: every read takes the tenant id, and another tenant's agent
// reads as absent (the API answers 404, never 403, so ids leak nothing); deletion is a soft
// `deleted_at` stamp so start-up re-adoption can still find and remove the agent's sandbox.
// An agent's remote tools (`remote_tools`, migration 4) are its whole current list, replaced as one
// value: loading an agent reads them here and never from its session log. Its MCP servers
// (`mcp_servers`, migration 8) likewise: the whole list, each with the tools it listed last.
// An agent another agent made (a child or teammate, migration 10) carries its links: set once at
// creation, never changed, so the tree and the teams survive a restart with the rows.
import type LibsqlDatabase from 'libsql';
import { nanoid } from 'nanoid';
import { SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import { type Database, guarded, storeError } from './db.ts';
import type { Sealer } from './sealed.ts';

export interface AgentRecord {
  id: string;
  tenantId: string;
  preset: string;
  mode: string;
  config: JsonValue;
  /** Every remote tool definition the agent has now (creation's, then registrations'), in order. */
  remoteTools: JsonValue[];
  /** Its MCP servers (specs and the tools each listed last), in registration order. */
  mcpServers: JsonValue[];
  /** The provider's id for the agent's sandbox, once it has one. */
  sandboxId?: string;
  /** Present only for an agent another agent made (subagent, spawn_teammate). */
  links?: AgentLinks;
  createdAt: number;
  deletedAt?: number;
}

/** How a child or teammate hangs off the agent that made it. */
export interface AgentLinks {
  /** The agent that made it. */
  parentId: string;
  /** `child` (subagent, subagent_fork) or `teammate` (spawn_teammate). */
  role: 'child' | 'teammate';
  /** Its parent's depth plus one (a top-level agent is depth 0). */
  depth: number;
  /** A teammate's team: the id of the lead that spawned it. */
  teamId?: string;
  /** A teammate's name, unique in its team. */
  name?: string;
}

export interface CreateAgentInput {
  tenantId: string;
  preset: string;
  mode: string;
  config: JsonValue;
  /** Its remote tools from the start. Default none. */
  remoteTools?: JsonValue[];
  /** For a child or teammate: who made it. */
  links?: AgentLinks;
}

export interface AgentStore {
  create(input: CreateAgentInput): AgentRecord;
  /** Undefined for unknown, deleted, or another tenant's agents. */
  get(tenantId: string, id: string): AgentRecord | undefined;
  /** Whether `get` would find the agent, without reading its record (one indexed row, no columns). */
  isLive(tenantId: string, id: string): boolean;
  /** The tenant's live agents, oldest first. */
  list(tenantId: string): AgentRecord[];
  /** False when there was no live agent of that tenant with that id. */
  markDeleted(tenantId: string, id: string): boolean;
  /** Replaces the agent's remote tools; false when there is no live agent of that tenant with that id. */
  setRemoteTools(tenantId: string, id: string, tools: JsonValue[]): boolean;
  /** Replaces the agent's MCP servers; false when there is no live agent of that tenant with that id. */
  setMcpServers(tenantId: string, id: string, servers: JsonValue[]): boolean;
  setSandboxId(id: string, sandboxId: string | undefined): void;
  /** Every agent of every tenant, for re-adoption at start; deleted ones only when asked. */
  listAll(options?: { includeDeleted?: boolean }): AgentRecord[];
  /** Live agents of any tenant whose record names a sandbox, by id after `after`, at most `limit`. */
  withSandbox(after: string, limit: number): AgentRecord[];
  /** A live agent of any tenant (ids are unique): for links that carry no tenant. */
  byId(id: string): AgentRecord | undefined;
  /** The live agents `parentId` made, oldest first. */
  children(tenantId: string, parentId: string): AgentRecord[];
  /** The live teammates of the team `teamId` (the lead's id), oldest first; the lead is not one. */
  teammates(tenantId: string, teamId: string): AgentRecord[];
}

interface AgentRow {
  id: string;
  tenant_id: string;
  preset: string;
  mode: string;
  config: string;
  remote_tools: string;
  mcp_servers: string;
  sandbox_id: string | null;
  created_at: number;
  deleted_at: number | null;
  parent_id?: string | null;
  team_id?: string | null;
  name?: string | null;
  role?: string | null;
  depth?: number;
}

function toRecord(r: AgentRow, open: (stored: string) => string): AgentRecord {
  const record: AgentRecord = {
    id: r.id,
    tenantId: r.tenant_id,
    preset: r.preset,
    mode: r.mode,
    config: JSON.parse(r.config),
    remoteTools: JSON.parse(r.remote_tools),
    mcpServers: r.mcp_servers === undefined ? [] : JSON.parse(open(r.mcp_servers)),
    createdAt: r.created_at,
  };
  if (r.sandbox_id !== null) record.sandboxId = r.sandbox_id;
  if (typeof r.parent_id === 'string') {
    const links: AgentLinks = {
      parentId: r.parent_id,
      role: r.role === 'teammate' ? 'teammate' : 'child',
      depth: r.depth ?? 1,
    };
    if (typeof r.team_id === 'string') links.teamId = r.team_id;
    if (typeof r.name === 'string') links.name = r.name;
    record.links = links;
  }
  if (r.deleted_at !== null) record.deletedAt = r.deleted_at;
  return record;
}

export const createAgentStore = (db: Database, now: () => number = Date.now, sealer?: Sealer): AgentStore => {
  // MCP servers' environments and headers are secrets: their column is sealed (sealed.ts).
  const open = (stored: string) => sealer?.open(stored) ?? stored;
  const read = (row: AgentRow) => toRecord(row, open);
  const insert = db.prepare(
    'INSERT INTO agents (id, tenant_id, preset, mode, config, remote_tools, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  // Prepared at first use, so a store on a schema before migration 10 (migration tests) still opens.
  let insertLinked: LibsqlDatabase.Statement | undefined;
  let selectChildren: LibsqlDatabase.Statement | undefined;
  let selectTeam: LibsqlDatabase.Statement | undefined;
  const selectById = db.prepare('SELECT * FROM agents WHERE id = ? AND deleted_at IS NULL');
  const select = db.prepare('SELECT * FROM agents WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL');
  const selectLiveOne = db.prepare(
    'SELECT 1 AS live FROM agents WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL',
  );
  const selectTenant = db.prepare(
    'SELECT * FROM agents WHERE tenant_id = ? AND deleted_at IS NULL ORDER BY created_at, rowid',
  );
  const selectLive = db.prepare('SELECT * FROM agents WHERE deleted_at IS NULL ORDER BY created_at, rowid');
  const selectAll = db.prepare('SELECT * FROM agents ORDER BY created_at, rowid');
  const remove = db.prepare(
    'UPDATE agents SET deleted_at = ? WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL',
  );
  const setRemote = db.prepare(
    'UPDATE agents SET remote_tools = ? WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL',
  );
  // Prepared at first use, so a store on a schema before migration 8 (migration tests) still opens.
  let setMcp: LibsqlDatabase.Statement | undefined;
  let selectWithSandbox: LibsqlDatabase.Statement | undefined;
  const setSandbox = db.prepare('UPDATE agents SET sandbox_id = ? WHERE id = ?');

  return {
    create(input) {
      const config = JSON.stringify(input.config ?? {});
      const remoteTools = JSON.stringify(input.remoteTools ?? []);
      const record: AgentRecord = {
        id: `agt_${nanoid()}`,
        tenantId: input.tenantId,
        preset: input.preset,
        mode: input.mode,
        config: JSON.parse(config),
        remoteTools: JSON.parse(remoteTools),
        mcpServers: [],
        createdAt: now(),
      };
      const links = input.links;
      if (links !== undefined) record.links = { ...links };
      try {
        const row = [
          record.id,
          record.tenantId,
          record.preset,
          record.mode,
          config,
          remoteTools,
          record.createdAt,
        ];
        if (links === undefined) insert.run(...row);
        else {
          insertLinked ??= db.prepare(
            `INSERT INTO agents (id, tenant_id, preset, mode, config, remote_tools, created_at,
               parent_id, team_id, name, role, depth) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          );
          insertLinked.run(
            ...row,
            links.parentId,
            links.teamId ?? null,
            links.name ?? null,
            links.role,
            links.depth,
          );
        }
      } catch (cause) {
        if ((cause as { code?: unknown }).code === 'SQLITE_CONSTRAINT_FOREIGNKEY') {
          throw new SandboxError('NOT_FOUND', `no tenant ${input.tenantId}`, {
            cause,
            data: { tenantId: input.tenantId },
          });
        }
        throw storeError('create agent', cause);
      }
      return record;
    },

    get: (tenantId, id) =>
      guarded('read agent', () => {
        const row = select.all(id, tenantId)[0] as AgentRow | undefined;
        return row === undefined ? undefined : read(row);
      }),

    // .get, not .all: all() goes through libsql's row iterator (a batch of 100 rows per step).
    isLive: (tenantId, id) => guarded('read agent', () => selectLiveOne.get(id, tenantId) !== undefined),

    list: (tenantId) => guarded('list agents', () => (selectTenant.all(tenantId) as AgentRow[]).map(read)),

    markDeleted: (tenantId, id) => guarded('delete agent', () => remove.run(now(), id, tenantId).changes > 0),

    setRemoteTools: (tenantId, id, tools) =>
      guarded('set agent remote tools', () => setRemote.run(JSON.stringify(tools), id, tenantId).changes > 0),

    setMcpServers: (tenantId, id, servers) =>
      guarded('set agent MCP servers', () => {
        setMcp ??= db.prepare(
          'UPDATE agents SET mcp_servers = ? WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL',
        );
        const text = JSON.stringify(servers);
        return setMcp.run(sealer?.seal(text) ?? text, id, tenantId).changes > 0;
      }),

    setSandboxId(id, sandboxId) {
      guarded('set agent sandbox', () => setSandbox.run(sandboxId ?? null, id));
    },

    listAll: (options = {}) =>
      guarded('list all agents', () =>
        ((options.includeDeleted ? selectAll : selectLive).all() as AgentRow[]).map(read),
      ),

    withSandbox: (after, limit) =>
      guarded('list agents with sandboxes', () => {
        selectWithSandbox ??= db.prepare(
          `SELECT * FROM agents WHERE id > ? AND sandbox_id IS NOT NULL AND deleted_at IS NULL
           ORDER BY id LIMIT ?`,
        );
        return (selectWithSandbox.all(after, limit) as AgentRow[]).map(read);
      }),

    byId: (id) =>
      guarded('read agent', () => {
        const row = selectById.all(id)[0] as AgentRow | undefined;
        return row === undefined ? undefined : read(row);
      }),

    children: (tenantId, parentId) =>
      guarded('list child agents', () => {
        selectChildren ??= db.prepare(
          'SELECT * FROM agents WHERE parent_id = ? AND tenant_id = ? AND deleted_at IS NULL ORDER BY created_at, rowid',
        );
        return (selectChildren.all(parentId, tenantId) as AgentRow[]).map(read);
      }),

    teammates: (tenantId, teamId) =>
      guarded('list teammates', () => {
        selectTeam ??= db.prepare(
          'SELECT * FROM agents WHERE team_id = ? AND tenant_id = ? AND deleted_at IS NULL ORDER BY created_at, rowid',
        );
        return (selectTeam.all(teamId, tenantId) as AgentRow[]).map(read);
      }),
  };
};
