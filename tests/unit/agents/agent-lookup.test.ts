// The agent service remembers a looked-up agent for a moment (records.ts AgentLookup), so a request
// does not read its row again: an agent deleted through the service reads as gone at once, one
// deleted by another process on the same database within AGENT_LOOKUP_MS, and no call of a
// deleted agent runs even while it is remembered. Another tenant's id stays NOT_FOUND.
// Runs on the store's in-memory doubles.
import { afterEach, describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import {
  AGENT_LOOKUP_MS,
  createAgentLookup,
  createDeletionMarks,
} from '../../../host/agents/service/records.ts';
import type { AgentService } from '../../../host/agents/service.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import type { AgentStore } from '../../../host/store/index.ts';
import { createMemoryEventLog, createMemoryRequestStore } from '../../../host/store/memory.ts';
import { createMemoryAgentStore } from '../../../host/store/memory-agents.ts';

let service: AgentService | undefined;
afterEach(async () => {
  await service?.close(0);
  service = undefined;
});

const boot = () => {
  const events = createMemoryEventLog();
  const store = { agents: createMemoryAgentStore(), events, requests: createMemoryRequestStore({ events }) };
  service = assembleAgents({ store, sandboxes: createMemoryProvider() }).agents;
  return { store, agents: service };
};

/** Counts the store's reads of one agent. */
const counting = (agents: AgentStore) => {
  let reads = 0;
  const store: AgentStore = {
    ...agents,
    get: (tenantId, id) => {
      reads++;
      return agents.get(tenantId, id);
    },
  };
  return { store, reads: () => reads };
};

const call = { id: 'r', name: 'read', arguments: { file_path: 'x.txt' } };

describe('the agent service', () => {
  it('answers NOT_FOUND for an agent at once after deleting it, though it was just looked up', async () => {
    const { agents } = boot();
    const agent = await agents.create('t', {});
    expect(agents.get('t', agent.id).id).toBe(agent.id);
    expect(agents.get('t', agent.id).id).toBe(agent.id);
    const deleting = agents.delete('t', agent.id);
    // Marked deleted before delete()'s first await: gone while the sandbox is still being removed.
    expect(() => agents.get('t', agent.id)).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
    await deleting;
    expect(() => agents.get('t', agent.id)).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
  });

  it('runs no call of an agent another process deleted, though it still remembers the agent', async () => {
    const { store, agents } = boot();
    const agent = await agents.create('t', {});
    const remembered = agents.get('t', agent.id);
    store.agents.markDeleted('t', agent.id); // as another process on the same database would
    await expect(
      agents.call(remembered, [call], { signal: new AbortController().signal }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND', message: `Agent ${agent.id} was deleted.` });
  });

  it("answers NOT_FOUND for another tenant's agent, remembered or not", async () => {
    const { agents } = boot();
    const agent = await agents.create('t', {});
    expect(() => agents.get('u', agent.id)).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
    agents.get('t', agent.id);
    expect(() => agents.get('u', agent.id)).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
  });
});

describe('the agent lookup', () => {
  it('reads the store once per AGENT_LOOKUP_MS, and sees a deletion by another process after it', () => {
    const base = createMemoryAgentStore();
    const { store, reads } = counting(base);
    let now = 1_000;
    const lookup = createAgentLookup(store, createDeletionMarks(store), { now: () => now });
    const { id } = base.create({ tenantId: 't', preset: 'standard', mode: 'direct', config: {} });
    lookup.get('t', id);
    lookup.get('t', id);
    expect(reads()).toBe(1);
    base.markDeleted('t', id);
    now += AGENT_LOOKUP_MS - 1;
    expect(lookup.get('t', id).id).toBe(id); // remembered (calls still check the store: above)
    now += 1;
    expect(() => lookup.get('t', id)).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
    expect(reads()).toBe(2);
  });

  it('reads the store again after forget, and while the agent is being deleted here', () => {
    const base = createMemoryAgentStore();
    const { store, reads } = counting(base);
    const marks = createDeletionMarks(store);
    const lookup = createAgentLookup(store, marks);
    const { id } = base.create({ tenantId: 't', preset: 'standard', mode: 'direct', config: {} });
    lookup.get('t', id);
    lookup.forget(id);
    lookup.get('t', id);
    expect(reads()).toBe(2);
    marks.deleting.add(id);
    lookup.get('t', id);
    expect(reads()).toBe(3);
  });
});
