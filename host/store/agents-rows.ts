// The rows of agents (`agents`) as both backends of the AgentStore read and write them: the row
// type, row → AgentRecord (the mcp_servers column opened by the sealer, sealed.ts), a new agent's
// record with the JSON its columns store, and the error for an unknown tenant. One module, so the
// libsql (agents-*.ts) and PostgreSQL (pg/agents.ts) backends mean the same by every column and
// refuse with the same words; each keeps only its SQL. Imports no backend.
import { nanoid } from 'nanoid';
import { SandboxError } from '../errors.ts';
import type { AgentLinks, AgentPause, AgentRecord, CreateAgentInput } from './agents-port.ts';

export interface AgentRow {
  id: string;
  tenant_id: string;
  preset: string;
  mode: string;
  config: string;
  remote_tools: string;
  mcp_servers: string;
  sandbox_id: string | null;
  paused?: string | null;
  created_at: number;
  deleted_at: number | null;
  parent_id?: string | null;
  team_id?: string | null;
  name?: string | null;
  role?: string | null;
  depth?: number;
}

export function toRecord(r: AgentRow, open: (stored: string) => string): AgentRecord {
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
  if (typeof r.paused === 'string') record.paused = JSON.parse(r.paused);
  return record;
}

/**
 * A new agent: its record (a fresh id, no MCP servers, links copied) and the JSON text its `config`
 * and `remote_tools` columns store. The record's values are parsed back from that text, so the
 * caller gets what a read would give, and nothing it changes in `input` later reaches the row.
 */
export const newAgent = (
  input: CreateAgentInput,
  createdAt: number,
): { record: AgentRecord; config: string; remoteTools: string } => {
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
    createdAt,
  };
  if (input.links !== undefined) record.links = { ...input.links };
  return { record, config, remoteTools };
};

/** The agent's tenant does not exist (the foreign key refused the row). */
export const noAgentTenant = (tenantId: string, cause: unknown): SandboxError =>
  new SandboxError('NOT_FOUND', `no tenant ${tenantId}`, { cause, data: { tenantId } });

/** The text the `paused` column keeps: the pause's fields in a fixed order, or NULL while it runs. */
export const pausedText = (paused: AgentPause | undefined): string | null =>
  paused === undefined ? null : JSON.stringify({ mode: paused.mode, at: paused.at, by: paused.by });
