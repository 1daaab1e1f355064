// The agent service's view of store.agents: records as Agents, the errors for missing and deleted
// agents, which agents are gone, and the lookup that remembers agents for a moment. Invariants: an
// agent is gone once its delete() began in this process (marked before the store is asked to stamp
// it; the lookup answers NOT_FOUND from then on) or the store no longer has it (deleted elsewhere);
// `gone` always asks the store, so no call of an agent deleted anywhere runs. The lookup answers from memory for AGENT_LOOKUP_MS after a read (an
// Agent never changes: its config, preset, mode and links are fixed at creation); an agent
// deleted in this process is forgotten at once, one deleted by another process sharing the
// database too when this process hears its `agent` wake-up (deletion.ts), else within
// AGENT_LOOKUP_MS (as a revoked key does); after the wake-up bus resynced, all are forgotten.
import { SandboxError } from '../../errors.ts';
import type { AgentRecord, AgentStore } from '../../store/index.ts';
import type { Agent, AgentConfig, PresentationMode, Preset, RemoteToolSpec } from '../types.ts';

export function toAgent(record: AgentRecord): Agent {
  return {
    id: record.id,
    tenantId: record.tenantId,
    preset: record.preset as Preset,
    mode: record.mode as PresentationMode,
    sessionId: record.id,
    config: (record.config ?? {}) as AgentConfig,
    ...(record.links === undefined ? {} : { links: record.links }),
    createdAt: record.createdAt,
  };
}

/** The remote tools stored with the agent (validated when they were stored). */
export function remoteToolsOf(record: AgentRecord): RemoteToolSpec[] {
  return record.remoteTools as unknown as RemoteToolSpec[];
}

export function deletedError(id: string): SandboxError {
  return new SandboxError('NOT_FOUND', `Agent ${id} was deleted.`, { data: { agentId: id } });
}

/** The tenant's live agent; NOT_FOUND for unknown, deleted or another tenant's agents. */
export async function getAgent(agents: AgentStore, tenantId: string, id: string): Promise<Agent> {
  const record = await agents.get(tenantId, id);
  if (record === undefined) throw new SandboxError('NOT_FOUND', `No agent ${id}.`, { data: { agentId: id } });
  return toAgent(record);
}

/** How long a looked-up agent is answered from memory. */
export const AGENT_LOOKUP_MS = 2000;
/** The most agents remembered at once (the oldest is forgotten first). */
const AGENT_LOOKUP_MAX = 1024;

export interface AgentLookup {
  /** getAgent, from memory when the agent was read in the last AGENT_LOOKUP_MS (else one store read). */
  get(tenantId: string, id: string): Promise<Agent>;
  /** Forgets the agent (deleted here or elsewhere, or refused at creation): the next get reads the store. */
  forget(id: string): void;
  /** Forgets every agent (wake-ups may have been missed). */
  forgetAll(): void;
}

export function createAgentLookup(
  agents: AgentStore,
  marks: DeletionMarks,
  options: { now?: () => number; ttlMs?: number } = {},
): AgentLookup {
  const now = options.now ?? Date.now;
  const ttlMs = options.ttlMs ?? AGENT_LOOKUP_MS;
  const known = new Map<string, { agent: Agent; until: number }>();
  return {
    async get(tenantId, id) {
      // Its delete began here (the store may not have stamped it yet): nothing new starts for it.
      if (marks.deleting.has(id)) throw deletedError(id);
      const entry = known.get(id);
      if (entry !== undefined && !marks.deleting.has(id)) {
        // Another tenant's id reads the store, which answers NOT_FOUND.
        if (entry.until > now() && entry.agent.tenantId === tenantId) return entry.agent;
        if (entry.until <= now()) known.delete(id);
      }
      const agent = await getAgent(agents, tenantId, id);
      if (ttlMs > 0 && !marks.deleting.has(id)) {
        if (known.size >= AGENT_LOOKUP_MAX && !known.has(id))
          known.delete(known.keys().next().value as string);
        known.set(id, { agent, until: now() + ttlMs });
      }
      return agent;
    },
    forget: (id) => {
      known.delete(id);
    },
    forgetAll: () => known.clear(),
  };
}

export interface DeletionMarks {
  /** Agents whose delete() is in progress in this process (the store already says deleted). */
  readonly deleting: Set<string>;
  /** Deleted here or by another process sharing the store (one indexed read unless deleted here; on libsql, remembered once live: agents-state.ts). */
  gone(agent: Agent): Promise<boolean>;
}

export function createDeletionMarks(agents: AgentStore): DeletionMarks {
  const deleting = new Set<string>();
  return {
    deleting,
    gone: async (agent) => deleting.has(agent.id) || !(await agents.isLive(agent.tenantId, agent.id)),
  };
}
