// The libsql agents repository's reads (agents.ts): one agent by tenant and id or by id alone, a
// tenant's agents, every agent at start, agents with sandboxes, and an agent's children and team.
// Invariants: every read but byId, listAll and withSandbox takes the tenant id, and another
// tenant's agent reads as absent; deleted agents are left out unless listAll is asked for them;
// lists come oldest first (created_at, then rowid), withSandbox by id.
import type { AgentRecord } from './agents-port.ts';
import type { AgentRow } from './agents-rows.ts';
import { type AgentsState, LIVE_REMEMBERED } from './agents-state.ts';
import { guarded } from './db.ts';

export function getAgent(state: AgentsState, tenantId: string, id: string): AgentRecord | undefined {
  return guarded('read agent', () => {
    const row = state.select.all(id, tenantId)[0] as AgentRow | undefined;
    return row === undefined ? undefined : state.read(row);
  });
}

/** Whether the agent exists and is not deleted: remembered once a read found it live (agents-state.ts). */
export function isLive(state: AgentsState, tenantId: string, id: string): boolean {
  const key = `${tenantId}\0${id}`;
  if (state.live.has(key)) return true;
  // .get, not .all: all() goes through libsql's row iterator (a batch of 100 rows per step).
  const live = guarded('read agent', () => state.selectLiveOne.get(id, tenantId) !== undefined);
  if (live) {
    if (state.live.size >= LIVE_REMEMBERED) state.live.delete(state.live.values().next().value as string);
    state.live.add(key);
  }
  return live;
}

export function listAgents(state: AgentsState, tenantId: string): AgentRecord[] {
  return guarded('list agents', () => (state.selectTenant.all(tenantId) as AgentRow[]).map(state.read));
}

export function listAllAgents(state: AgentsState, options: { includeDeleted?: boolean } = {}): AgentRecord[] {
  return guarded('list all agents', () =>
    ((options.includeDeleted ? state.selectAll : state.selectLive).all() as AgentRow[]).map(state.read),
  );
}

export function withSandbox(state: AgentsState, after: string, limit: number): AgentRecord[] {
  return guarded('list agents with sandboxes', () => {
    state.selectWithSandbox ??= state.db.prepare(
      `SELECT * FROM agents WHERE id > ? AND sandbox_id IS NOT NULL AND deleted_at IS NULL
       ORDER BY id LIMIT ?`,
    );
    return (state.selectWithSandbox.all(after, limit) as AgentRow[]).map(state.read);
  });
}

export function agentById(state: AgentsState, id: string): AgentRecord | undefined {
  return guarded('read agent', () => {
    const row = state.selectById.all(id)[0] as AgentRow | undefined;
    return row === undefined ? undefined : state.read(row);
  });
}

export function childrenOf(state: AgentsState, tenantId: string, parentId: string): AgentRecord[] {
  return guarded('list child agents', () => {
    state.selectChildren ??= state.db.prepare(
      'SELECT * FROM agents WHERE parent_id = ? AND tenant_id = ? AND deleted_at IS NULL ORDER BY created_at, rowid',
    );
    return (state.selectChildren.all(parentId, tenantId) as AgentRow[]).map(state.read);
  });
}

export function teammatesOf(state: AgentsState, tenantId: string, teamId: string): AgentRecord[] {
  return guarded('list teammates', () => {
    state.selectTeam ??= state.db.prepare(
      'SELECT * FROM agents WHERE team_id = ? AND tenant_id = ? AND deleted_at IS NULL ORDER BY created_at, rowid',
    );
    return (state.selectTeam.all(teamId, tenantId) as AgentRow[]).map(state.read);
  });
}
