// The agents port: an agent's record, its links, and the AgentStore every backend implements
// (agents.ts over libsql, memory-agents.ts in memory). Invariants every backend keeps: every read
// takes the tenant id, and another tenant's agent reads as absent; deletion is a soft stamp; an
// agent's remote tools and MCP servers are each one whole list, replaced as one value; an agent's
// links are set once at creation and never change. Every method is asynchronous, so a backend
// over the network (Postgres) fits the same port; the libsql one answers from its synchronous
// prepared statements.
import type { JsonValue } from '../json.ts';

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
  /** Set while the agent is paused (its sandbox stopped or frozen, its workspace kept). */
  paused?: AgentPause;
}

/** An agent's pause, as kept in its record (host/agents/service/pause.ts owns its meaning). */
export interface AgentPause {
  /** `stop`: its container stopped; `freeze`: its processes frozen in place (the engine's freezer). */
  mode: 'stop' | 'freeze';
  /** When it was paused (epoch ms). */
  at: number;
  /** `api`: POST /v1/agents/:id/pause; `idle`: its tenant's idle setting. */
  by: 'api' | 'idle';
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
  create(input: CreateAgentInput): Promise<AgentRecord>;
  /** Undefined for unknown, deleted, or another tenant's agents. */
  get(tenantId: string, id: string): Promise<AgentRecord | undefined>;
  /** Whether `get` would find the agent, without reading its record (one indexed row, no columns). */
  isLive(tenantId: string, id: string): Promise<boolean>;
  /** The tenant's live agents, oldest first. */
  list(tenantId: string): Promise<AgentRecord[]>;
  /** False when there was no live agent of that tenant with that id. */
  markDeleted(tenantId: string, id: string): Promise<boolean>;
  /** Replaces the agent's remote tools; false when there is no live agent of that tenant with that id. */
  setRemoteTools(tenantId: string, id: string, tools: JsonValue[]): Promise<boolean>;
  /** Replaces the agent's MCP servers; false when there is no live agent of that tenant with that id. */
  setMcpServers(tenantId: string, id: string, servers: JsonValue[]): Promise<boolean>;
  setSandboxId(id: string, sandboxId: string | undefined): Promise<void>;
  /** Sets (or with undefined, clears) the agent's pause; false when there is no live agent of that tenant with that id. */
  setPaused(tenantId: string, id: string, paused: AgentPause | undefined): Promise<boolean>;
  /** Every agent of every tenant, for re-adoption at start; deleted ones only when asked. */
  listAll(options?: { includeDeleted?: boolean }): Promise<AgentRecord[]>;
  /** Live agents of any tenant whose record names a sandbox, by id after `after`, at most `limit`. */
  withSandbox(after: string, limit: number): Promise<AgentRecord[]>;
  /** A live agent of any tenant (ids are unique): for links that carry no tenant. */
  byId(id: string): Promise<AgentRecord | undefined>;
  /** The live agents `parentId` made, oldest first. */
  children(tenantId: string, parentId: string): Promise<AgentRecord[]>;
  /** The live teammates of the team `teamId` (the lead's id), oldest first; the lead is not one. */
  teammates(tenantId: string, teamId: string): Promise<AgentRecord[]>;
}
