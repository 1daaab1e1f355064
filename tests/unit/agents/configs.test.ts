// The global tools read an agent's config from its scope (host/agents/configs.ts): a config is fixed
// at creation, so the one read with the record when the agent is loaded serves every step, and a
// step reads no row for it; a scope with no agent service behind it has none.
import { afterEach, describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { configOf } from '../../../host/agents/configs.ts';
import type { AgentService } from '../../../host/agents/service.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import type { AgentStore } from '../../../host/store/index.ts';
import { createMemoryEventLog, createMemoryRequestStore } from '../../../host/store/memory.ts';
import { createMemoryAgentStore } from '../../../host/store/memory-agents.ts';
import type { AgentScope } from '../../../host/tools/types.ts';

let service: AgentService | undefined;
afterEach(async () => {
  await service?.close(0);
  service = undefined;
});

describe('configOf', () => {
  it("answers the config the agent's scope was loaded with, and none for a bare scope", () => {
    const scope = (services: AgentScope['services']): AgentScope => ({
      id: 'agt_1',
      sessionId: 'agt_1',
      services,
    });
    expect(configOf(scope({ agentConfig: { fetch: true } }))).toEqual({ fetch: true });
    expect(configOf(scope({ tenantId: 't' }))).toBeUndefined();
  });

  it("is read with the agent's record once, not per step", async () => {
    const base = createMemoryAgentStore();
    let reads = 0;
    const agents: AgentStore = {
      ...base,
      get: (tenantId, id) => {
        reads++;
        return base.get(tenantId, id);
      },
    };
    const events = createMemoryEventLog();
    const store = { agents, events, requests: createMemoryRequestStore({ events }) };
    service = assembleAgents({ store, sandboxes: createMemoryProvider() }).agents;
    const agent = await service.create('t', { fetch: true, codeMode: { wallMs: 1000 } });
    const before = reads;
    for (let i = 0; i < 3; i++) await service.step(agent);
    expect(reads).toBe(before);
  });
});
