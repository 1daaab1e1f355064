// The agents repository. Invariants: every read takes the tenant id, and another tenant's agent
// reads as absent (the API answers 404, never 403, so ids leak nothing); deletion is a soft
// `deleted_at` stamp so start-up re-adoption can still find and remove the agent's sandbox.
// An agent's remote tools (`remote_tools`, migration 4) are its whole current list, replaced as one
// value: loading an agent reads them here and never from its session log. Its MCP servers
// (`mcp_servers`, migration 8) likewise: the whole list, each with the tools it listed last.
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
  createdAt: number;
  deletedAt?: number;
}

export interface CreateAgentInput {
  tenantId: string;
  preset: string;
  mode: string;
  config: JsonValue;
  /** Its remote tools from the start. Default none. */
  remoteTools?: JsonValue[];
}

export interface AgentStore {
  create(input: CreateAgentInput): AgentRecord;
  /** Undefined for unknown, deleted, or another tenant's agents. */
  get(tenantId: string, id: string): AgentRecord | undefined;
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
  const select = db.prepare('SELECT * FROM agents WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL');
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
      try {
        insert.run(
          record.id,
          record.tenantId,
          record.preset,
          record.mode,
          config,
          remoteTools,
          record.createdAt,
        );
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
  };
};
