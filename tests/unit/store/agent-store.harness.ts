// The AgentStore's harnesses: how its contract suite (agent-store.contract.ts) opens each
// implementation. Asynchronous end to end (open, tenant, reopen, cleanup), so a backend over the
// network runs the same suite: Postgres's harness sits in agent-store.postgres.test.ts, beside
// the private cluster it needs (tests/helpers/postgres.ts), so the libsql and memory runs never load pg.
// `reopen` is an optional capability: a second store on the same storage while the first stays
// open (a restart or a second process); the memory store has none, so those cases skip there.
import { type AgentStore, createAgentStore } from '../../../host/store/agents.ts';
import { createMemoryAgentStore } from '../../../host/store/memory-agents.ts';
import { createTenantStore } from '../../../host/store/tenants.ts';
import { tempDatabase } from './harness.ts';

export interface AgentStoreInstance {
  agents: AgentStore;
  /** Makes a tenant agents can belong to; resolves to its id. */
  tenant(name: string): Promise<string>;
  reopen?: () => Promise<AgentStore>;
  cleanup(): Promise<void> | void;
}

export interface AgentStoreHarness {
  name: string;
  /** `now`: the store's clock (createdAt, deletedAt). */
  open(options?: { now?: () => number }): Promise<AgentStoreInstance>;
}

export const libsqlAgentStoreHarness: AgentStoreHarness = {
  name: 'libsql',
  async open(options = {}) {
    const temp = tempDatabase();
    const db = temp.connect();
    return {
      agents: createAgentStore(db, options.now),
      tenant: async (name) => (await createTenantStore(db).createTenant(name)).id,
      reopen: async () => createAgentStore(temp.connect(), options.now),
      cleanup: temp.cleanup,
    };
  },
};

export const memoryAgentStoreHarness: AgentStoreHarness = {
  name: 'memory',
  async open(options = {}) {
    const tenants = new Set<string>();
    const agents = createMemoryAgentStore({
      ...(options.now ? { now: options.now } : {}),
      tenantExists: (id) => tenants.has(id),
    });
    return {
      agents,
      async tenant(name) {
        tenants.add(`ten_${name}`);
        return `ten_${name}`;
      },
      cleanup: () => {},
    };
  },
};
