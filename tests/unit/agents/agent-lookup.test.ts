// The agent service remembers a looked-up agent for a moment (records.ts AgentLookup), so a request
// does not read its row again: an agent deleted through the service reads as gone once its delete
// has read it (before the store is asked to stamp it), one
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
  it('answers NOT_FOUND for an agent once its delete began, though it was just looked up', async () => {
    const { store, agents } = boot();
    const agent = await agents.create('t', {});
    expect((await agents.get('t', agent.id)).id).toBe(agent.id);
    expect((await agents.get('t', agent.id)).id).toBe(agent.id);
    // The store's stamp is the delete's second step: by then the agent is marked here.
    let looked: Promise<unknown> | undefined;
    const markDeleted = store.agents.markDeleted;
    store.agents.markDeleted = (tenantId, id) => {
      looked = agents.get('t', agent.id);
      return markDeleted(tenantId, id);
    };
    await agents.delete('t', agent.id);
    await expect(looked).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(agents.get('t', agent.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('runs no call of an agent another process deleted, though it still remembers the agent', async () => {
    const { store, agents } = boot();
    const agent = await agents.create('t', {});
    const remembered = await agents.get('t', agent.id);
    await store.agents.markDeleted('t', agent.id); // as another process on the same database would
    await expect(
      agents.call(remembered, [call], { signal: new AbortController().signal }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND', message: `Agent ${agent.id} was deleted.` });
  });

  it("answers NOT_FOUND for another tenant's agent, remembered or not", async () => {
    const { agents } = boot();
    const agent = await agents.create('t', {});
    await expect(agents.get('u', agent.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await agents.get('t', agent.id);
    await expect(agents.get('u', agent.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('the agent lookup', () => {
  it('reads the store once per AGENT_LOOKUP_MS, and sees a deletion by another process after it', async () => {
    const base = createMemoryAgentStore();
    const { store, reads } = counting(base);
    let now = 1_000;
    const lookup = createAgentLookup(store, createDeletionMarks(store), { now: () => now });
    const { id } = await base.create({ tenantId: 't', preset: 'standard', mode: 'direct', config: {} });
    await lookup.get('t', id);
    await lookup.get('t', id);
    expect(reads()).toBe(1);
    await base.markDeleted('t', id);
    now += AGENT_LOOKUP_MS - 1;
    expect((await lookup.get('t', id)).id).toBe(id); // remembered (calls still check the store: above)
    now += 1;
    await expect(lookup.get('t', id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(reads()).toBe(2);
  });

  it('reads the store again after forget, and answers NOT_FOUND while the agent is being deleted here', async () => {
    const base = createMemoryAgentStore();
    const { store, reads } = counting(base);
    const marks = createDeletionMarks(store);
    const lookup = createAgentLookup(store, marks);
    const { id } = await base.create({ tenantId: 't', preset: 'standard', mode: 'direct', config: {} });
    await lookup.get('t', id);
    lookup.forget(id);
    await lookup.get('t', id);
    expect(reads()).toBe(2);
    marks.deleting.add(id);
    await expect(lookup.get('t', id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(reads()).toBe(2);
  });
});
