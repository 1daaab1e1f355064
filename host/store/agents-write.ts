// The libsql agents repository's writes (agents.ts): creating an agent (with its links, for a child
// or teammate), the soft delete, and replacing its remote tools, MCP servers or sandbox id.
// Invariants: an agent of an unknown tenant is NOT_FOUND (the foreign key decides); links are
// written only at creation; deletion stamps `deleted_at` and never removes the row, so start-up
// re-adoption can still find and remove the agent's sandbox; every update skips a deleted agent
// and another tenant's.
import type { JsonValue } from '../json.ts';
import type { AgentPause, AgentRecord, CreateAgentInput } from './agents-port.ts';
import { newAgent, noAgentTenant, pausedText } from './agents-rows.ts';
import type { AgentsState } from './agents-state.ts';
import { guarded, storeError } from './db.ts';

export function createAgent(state: AgentsState, input: CreateAgentInput): AgentRecord {
  const { record, config, remoteTools } = newAgent(input, state.now());
  const links = input.links;
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
    if (links === undefined) state.insert.run(...row);
    else {
      state.insertLinked ??= state.db.prepare(
        `INSERT INTO agents (id, tenant_id, preset, mode, config, remote_tools, created_at,
           parent_id, team_id, name, role, depth) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      state.insertLinked.run(
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
      throw noAgentTenant(input.tenantId, cause);
    }
    throw storeError('create agent', cause);
  }
  return record;
}

export function markDeleted(state: AgentsState, tenantId: string, id: string): boolean {
  state.live.delete(`${tenantId}\0${id}`); // before the write: never remembered live once deleted
  return guarded('delete agent', () => state.remove.run(state.now(), id, tenantId).changes > 0);
}

export function setRemoteTools(
  state: AgentsState,
  tenantId: string,
  id: string,
  tools: JsonValue[],
): boolean {
  return guarded(
    'set agent remote tools',
    () => state.setRemote.run(JSON.stringify(tools), id, tenantId).changes > 0,
  );
}

export function setMcpServers(
  state: AgentsState,
  tenantId: string,
  id: string,
  servers: JsonValue[],
): boolean {
  return guarded('set agent MCP servers', () => {
    state.setMcp ??= state.db.prepare(
      'UPDATE agents SET mcp_servers = ? WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL',
    );
    const text = JSON.stringify(servers);
    return state.setMcp.run(state.sealer?.seal(text) ?? text, id, tenantId).changes > 0;
  });
}

export function setSandboxId(state: AgentsState, id: string, sandboxId: string | undefined): void {
  guarded('set agent sandbox', () => state.setSandbox.run(sandboxId ?? null, id));
}

export function setPaused(
  state: AgentsState,
  tenantId: string,
  id: string,
  paused: AgentPause | undefined,
): boolean {
  return guarded('set agent paused', () => state.setPaused.run(pausedText(paused), id, tenantId).changes > 0);
}
