// In-memory AgentStore: the agents repository's double for unit tests, held to the same contract
// as the libsql one (tests/unit/store/agent-store.contract.ts). Records are kept as JSON copies, so
// callers cannot change what was stored; nothing here survives the process. Its methods are async like the port's, answering at once.
import { nanoid } from 'nanoid';
import { SandboxError } from '../errors.ts';
import type { AgentRecord, AgentStore } from './agents.ts';

export interface MemoryAgentStoreOptions {
  /** Clock for createdAt and deletedAt. Default Date.now. */
  now?: () => number;
  /** Whether a tenant exists (creating an agent for one that does not is NOT_FOUND). Default: all do. */
  tenantExists?: (tenantId: string) => boolean;
}

export const createMemoryAgentStore = (options: MemoryAgentStoreOptions = {}): AgentStore => {
  const now = options.now ?? Date.now;
  const tenantExists = options.tenantExists ?? (() => true);
  /** Insertion order is creation order, the libsql store's tie-break on equal createdAt. */
  const records = new Map<string, AgentRecord>();

  function copy(record: AgentRecord): AgentRecord {
    return JSON.parse(JSON.stringify(record));
  }

  function live(tenantId: string, id: string): AgentRecord | undefined {
    const record = records.get(id);
    return record?.tenantId === tenantId && record.deletedAt === undefined ? record : undefined;
  }

  function byCreation(list: AgentRecord[]): AgentRecord[] {
    return list.sort((a, b) => a.createdAt - b.createdAt).map(copy);
  }

  return {
    async create(input) {
      if (!tenantExists(input.tenantId))
        throw new SandboxError('NOT_FOUND', `no tenant ${input.tenantId}`, {
          data: { tenantId: input.tenantId },
        });
      const record: AgentRecord = copy({
        id: `agt_${nanoid()}`,
        tenantId: input.tenantId,
        preset: input.preset,
        mode: input.mode,
        config: input.config ?? {},
        remoteTools: input.remoteTools ?? [],
        mcpServers: [],
        ...(input.links === undefined ? {} : { links: input.links }),
        createdAt: now(),
      });
      records.set(record.id, record);
      return copy(record);
    },

    async get(tenantId, id) {
      const record = live(tenantId, id);
      return record === undefined ? undefined : copy(record);
    },

    isLive: async (tenantId, id) => live(tenantId, id) !== undefined,

    list: async (tenantId) =>
      byCreation([...records.values()].filter((r) => r.tenantId === tenantId && r.deletedAt === undefined)),

    async markDeleted(tenantId, id) {
      const record = live(tenantId, id);
      if (record !== undefined) record.deletedAt = now();
      return record !== undefined;
    },

    async setRemoteTools(tenantId, id, tools) {
      const record = live(tenantId, id);
      if (record !== undefined) record.remoteTools = JSON.parse(JSON.stringify(tools));
      return record !== undefined;
    },

    async setMcpServers(tenantId, id, servers) {
      const record = live(tenantId, id);
      if (record !== undefined) record.mcpServers = JSON.parse(JSON.stringify(servers));
      return record !== undefined;
    },

    async setPaused(tenantId, id, paused) {
      const record = live(tenantId, id);
      if (record === undefined) return false;
      if (paused === undefined) delete record.paused;
      else record.paused = { mode: paused.mode, at: paused.at, by: paused.by };
      return true;
    },

    async setSandboxId(id, sandboxId) {
      const record = records.get(id);
      if (record === undefined) return;
      if (sandboxId === undefined) delete record.sandboxId;
      else record.sandboxId = sandboxId;
    },

    listAll: async (options = {}) =>
      byCreation([...records.values()].filter((r) => options.includeDeleted || r.deletedAt === undefined)),

    withSandbox: async (after, limit) =>
      [...records.values()]
        .filter((r) => r.id > after && r.sandboxId !== undefined && r.deletedAt === undefined)
        .sort((a, b) => (a.id < b.id ? -1 : 1))
        .slice(0, limit)
        .map(copy),

    async byId(id) {
      const record = records.get(id);
      return record === undefined || record.deletedAt !== undefined ? undefined : copy(record);
    },

    children: async (tenantId, parentId) =>
      byCreation(
        [...records.values()].filter(
          (r) => r.tenantId === tenantId && r.deletedAt === undefined && r.links?.parentId === parentId,
        ),
      ),

    teammates: async (tenantId, teamId) =>
      byCreation(
        [...records.values()].filter(
          (r) => r.tenantId === tenantId && r.deletedAt === undefined && r.links?.teamId === teamId,
        ),
      ),
  };
};
