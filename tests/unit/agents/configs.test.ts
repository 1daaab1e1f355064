// The global tools read an agent's config once (host/agents/configs.ts): a config is fixed at
// creation, so a remembered one is the stored one; another tenant's id, an unknown and a deleted
// agent have none.
import { describe, expect, it } from 'vitest';
import { rememberConfigs } from '../../../host/agents/configs.ts';
import type { AgentStore } from '../../../host/store/index.ts';
import { createMemoryAgentStore } from '../../../host/store/memory-agents.ts';

const counting = (agents: AgentStore) => {
  let reads = 0;
  return {
    store: {
      get: (tenantId: string, id: string) => {
        reads++;
        return agents.get(tenantId, id);
      },
    },
    reads: () => reads,
  };
};

/** An agent of tenant t created with `fetch: true`. */
const fetching = (agents: AgentStore) =>
  agents.create({ tenantId: 't', preset: 'standard', mode: 'direct', config: { fetch: true } });

describe('rememberConfigs', () => {
  it("reads an agent's config once", () => {
    const agents = createMemoryAgentStore();
    const { store, reads } = counting(agents);
    const configOf = rememberConfigs(store);
    const { id } = fetching(agents);
    expect(configOf('t', id)).toEqual({ fetch: true });
    expect(configOf('t', id)).toEqual({ fetch: true });
    expect(reads()).toBe(1);
  });

  it("answers none for another tenant's agent, remembered or not, and for unknown or deleted ones", () => {
    const agents = createMemoryAgentStore();
    const configOf = rememberConfigs(agents);
    const { id } = fetching(agents);
    expect(configOf('u', id)).toBeUndefined();
    configOf('t', id);
    expect(configOf('u', id)).toBeUndefined();
    expect(configOf('t', 'nope')).toBeUndefined();
    const gone = agents.create({ tenantId: 't', preset: 'standard', mode: 'direct', config: {} });
    agents.markDeleted('t', gone.id);
    expect(configOf('t', gone.id)).toBeUndefined();
  });
});
