import { afterEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../host/store/index.ts';
import { tempDatabase } from './harness.ts';

describe('agents repository', () => {
  let temp: ReturnType<typeof tempDatabase>;
  let store: Store;
  const open = () => {
    temp = tempDatabase();
    store = openStore({ dataDir: temp.dir });
    const a = store.tenants.createTenant('a');
    const b = store.tenants.createTenant('b');
    return { agents: store.agents, a: a.id, b: b.id };
  };
  afterEach(() => {
    store.close();
    temp.cleanup();
  });

  it('creates agt_ agents that their tenant can read back', () => {
    const { agents, a } = open();
    const agent = agents.create({
      tenantId: a,
      preset: 'coder',
      mode: 'native',
      config: { restrict: ['bash'] },
    });
    expect(agent.id).toMatch(/^agt_/);
    expect(agents.get(a, agent.id)).toEqual(agent);
    expect(agents.list(a)).toEqual([agent]);
  });

  it("answers another tenant's agent id as absent, and never lists or deletes it", () => {
    const { agents, a, b } = open();
    const agent = agents.create({ tenantId: a, preset: 'coder', mode: 'native', config: {} });
    expect(agents.get(b, agent.id)).toBeUndefined();
    expect(agents.list(b)).toEqual([]);
    expect(agents.markDeleted(b, agent.id)).toBe(false);
    expect(agents.get(a, agent.id)).toBeDefined();
  });

  it('hides deleted agents from the tenant but still lists them for re-adoption when asked', () => {
    const { agents, a, b } = open();
    const gone = agents.create({ tenantId: a, preset: 'coder', mode: 'native', config: {} });
    const kept = agents.create({ tenantId: b, preset: 'coder', mode: 'code', config: {} });
    agents.setSandboxId(gone.id, 'ctr_1');
    expect(agents.markDeleted(a, gone.id)).toBe(true);
    expect(agents.markDeleted(a, gone.id)).toBe(false);
    expect(agents.get(a, gone.id)).toBeUndefined();
    expect(agents.listAll().map((x) => x.id)).toEqual([kept.id]);
    expect(agents.listAll({ includeDeleted: true }).find((x) => x.id === gone.id)).toMatchObject({
      sandboxId: 'ctr_1',
      deletedAt: expect.any(Number),
    });
  });

  it('keeps agents and their sandbox ids across a restart', () => {
    const { agents, a } = open();
    const agent = agents.create({ tenantId: a, preset: 'coder', mode: 'native', config: { n: 1 } });
    agents.setSandboxId(agent.id, 'ctr_9');
    store.close();
    store = openStore({ dataDir: temp.dir });
    expect(store.agents.get(a, agent.id)).toEqual({ ...agent, sandboxId: 'ctr_9' });
    store.agents.setSandboxId(agent.id, undefined);
    expect(store.agents.get(a, agent.id)).not.toHaveProperty('sandboxId');
  });

  it('refuses an agent for a tenant that does not exist with NOT_FOUND', () => {
    open();
    expect(() =>
      store.agents.create({ tenantId: 'ten_nope', preset: 'p', mode: 'native', config: {} }),
    ).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
  });
});
