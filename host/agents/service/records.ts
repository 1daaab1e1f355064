// The agent service's view of store.agents: records as Agents, the errors for missing and deleted
// agents, and which agents are gone. Invariant: an agent is gone once its delete() began in this
// process (marked before its first await) or the store no longer has it (deleted elsewhere).
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
export function getAgent(agents: AgentStore, tenantId: string, id: string): Agent {
  const record = agents.get(tenantId, id);
  if (record === undefined) throw new SandboxError('NOT_FOUND', `No agent ${id}.`, { data: { agentId: id } });
  return toAgent(record);
}

export interface DeletionMarks {
  /** Agents whose delete() is in progress in this process (the store already says deleted). */
  readonly deleting: Set<string>;
  /** Deleted here or by another process sharing the store. */
  gone(agent: Agent): boolean;
}

export function createDeletionMarks(agents: AgentStore): DeletionMarks {
  const deleting = new Set<string>();
  return {
    deleting,
    gone: (agent) => deleting.has(agent.id) || agents.get(agent.tenantId, agent.id) === undefined,
  };
}
