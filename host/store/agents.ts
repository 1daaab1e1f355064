// The agents repository. Invariants: every read takes the tenant id, and another tenant's agent
// reads as absent (the API answers 404, never 403, so ids leak nothing); deletion is a soft
// `deleted_at` stamp so start-up re-adoption can still find and remove the agent's sandbox.
// An agent's remote tools (`remote_tools`, migration 4) are its whole current list, replaced as one
// value: loading an agent reads them here and never from its session log. Its MCP servers
// (`mcp_servers`, migration 8) likewise: the whole list, each with the tools it listed last.
// An agent another agent made (a child or teammate, migration 10) carries its links: set once at
// creation, never changed, so the tree and the teams survive a restart with the rows.
// This module wires the libsql parts: agents-port.ts holds the records and the AgentStore port
// (re-exported here); agents-rows.ts the rows and new records (shared with pg/agents.ts);
// agents-state.ts the prepared statements; agents-write.ts creation,
// deletion and updates; agents-read.ts the reads. Those parts stay synchronous (prepared
// statements on the main thread, as fast as before); the port wraps each call in an async method,
// so a failure reaches the caller as a rejected promise, never as a throw.
import type { AgentStore } from './agents-port.ts';
import {
  agentById,
  childrenOf,
  getAgent,
  isLive,
  listAgents,
  listAllAgents,
  teammatesOf,
  withSandbox,
} from './agents-read.ts';
import { prepareAgents } from './agents-state.ts';
import {
  createAgent,
  markDeleted,
  setMcpServers,
  setPaused,
  setRemoteTools,
  setSandboxId,
} from './agents-write.ts';
import type { Database } from './db.ts';
import type { Sealer } from './sealed.ts';

export type { AgentLinks, AgentPause, AgentRecord, AgentStore, CreateAgentInput } from './agents-port.ts';

export const createAgentStore = (db: Database, now: () => number = Date.now, sealer?: Sealer): AgentStore => {
  const state = prepareAgents(db, now, sealer);
  return {
    create: async (input) => createAgent(state, input),
    get: async (tenantId, id) => getAgent(state, tenantId, id),
    isLive: async (tenantId, id) => isLive(state, tenantId, id),
    list: async (tenantId) => listAgents(state, tenantId),
    markDeleted: async (tenantId, id) => markDeleted(state, tenantId, id),
    setRemoteTools: async (tenantId, id, tools) => setRemoteTools(state, tenantId, id, tools),
    setMcpServers: async (tenantId, id, servers) => setMcpServers(state, tenantId, id, servers),
    setSandboxId: async (id, sandboxId) => setSandboxId(state, id, sandboxId),
    setPaused: async (tenantId, id, paused) => setPaused(state, tenantId, id, paused),
    listAll: async (options) => listAllAgents(state, options),
    withSandbox: async (after, limit) => withSandbox(state, after, limit),
    byId: async (id) => agentById(state, id),
    children: async (tenantId, parentId) => childrenOf(state, tenantId, parentId),
    teammates: async (tenantId, teamId) => teammatesOf(state, tenantId, teamId),
  };
};
