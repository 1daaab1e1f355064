// Registering remote tools is all or nothing: a registration the tool scope, the log budget or a
// concurrent delete refuses leaves the agent's tools, seen by its model and stored, as they were.
// Runs on the store's in-memory doubles.
import { afterEach, describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import type { AgentService } from '../../../host/agents/service.ts';
import type { Agent } from '../../../host/agents/types.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { createMemoryEventLog, createMemoryRequestStore } from '../../../host/store/memory.ts';
import { createMemoryAgentStore } from '../../../host/store/memory-agents.ts';

const tool = (name: string) => ({ name, description: name, parameters: { type: 'object' } });

let service: AgentService | undefined;
afterEach(async () => {
  await service?.close(0);
  service = undefined;
});

const boot = (logBudgetBytes?: number) => {
  const events = createMemoryEventLog(logBudgetBytes === undefined ? {} : { budgetBytes: logBudgetBytes });
  const store = { agents: createMemoryAgentStore(), events, requests: createMemoryRequestStore({ events }) };
  service = assembleAgents({ store, sandboxes: createMemoryProvider() }).agents;
  return { store, agents: service };
};

const names = async (agents: AgentService, agent: Agent) =>
  (await agents.tools(agent)).tools.map((t) => t.name).filter((n) => n.startsWith('client_'));

describe('a refused registration changes nothing', () => {
  it('when one of its tools has a reserved name', async () => {
    const { store, agents } = boot();
    const agent = await agents.create('t', { remoteTools: [tool('client_a')] });
    await expect(
      agents.registerRemoteTools(agent, [tool('client_a'), tool('client_b'), tool('run_code')]),
    ).rejects.toMatchObject({ code: 'RESERVED_TOOL_NAME' });
    expect(await names(agents, agent)).toEqual(['client_a']);
    expect((await store.agents.get('t', agent.id))?.remoteTools).toEqual([tool('client_a')]);
    expect(await agents.registerRemoteTools(agent, [tool('client_b')])).toEqual(['client_a', 'client_b']);
  });

  it("when its tenant's log budget refuses to record it", async () => {
    const { store, agents } = boot(1);
    const agent = await agents.create('t', { remoteTools: [tool('client_a')] });
    await expect(agents.registerRemoteTools(agent, [tool('client_b')])).rejects.toMatchObject({
      code: 'STORE_BUDGET_EXCEEDED',
    });
    expect(await names(agents, agent)).toEqual(['client_a']);
    expect((await store.agents.get('t', agent.id))?.remoteTools).toEqual([tool('client_a')]);
  });

  it('when another process deleted the agent meanwhile', async () => {
    const { store, agents } = boot();
    const agent = await agents.create('t', { remoteTools: [tool('client_a')] });
    await store.agents.markDeleted('t', agent.id);
    await expect(agents.registerRemoteTools(agent, [tool('client_b')])).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });
});

it('stores the remote tools an agent was created with once per name, the last one winning', async () => {
  const { store, agents } = boot();
  const first = { ...tool('client_a'), description: 'first' };
  const agent = await agents.create('t', { remoteTools: [first, tool('client_b'), tool('client_a')] });
  expect((await store.agents.get('t', agent.id))?.remoteTools).toEqual([tool('client_b'), tool('client_a')]);
  expect(await names(agents, agent)).toEqual(['client_b', 'client_a']);
});
