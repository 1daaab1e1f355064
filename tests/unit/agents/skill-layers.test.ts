// The tenant layer of `skill` over an asynchronous catalog (host/agents/skill-layers.ts): the
// first listing of a tenant is read once, and no describe or step resolves before it is in its
// layer; a change re-reads it, and a slower older read never replaces a newer one; a change made in
// another process (reload) re-reads it without telling the clients again.
import { describe, expect, it } from 'vitest';
import { createRegistryRuntime } from '../../../host/agents/runtime.ts';
import { createSkillLayers } from '../../../host/agents/skill-layers.ts';
import { createMemoryEventLog } from '../../../host/store/memory.ts';
import { type SkillEntry, type SkillPort, skillTool } from '../../../host/tools/builtin/skill.ts';
import { createRegistry } from '../../../host/tools/index.ts';
import type { AgentScope } from '../../../host/tools/types.ts';
import { until } from '../../helpers/until.ts';

/** A catalog whose every list() waits until the test answers it. */
const heldCatalog = () => {
  const reads: { tenantId: string; answer(entries: SkillEntry[]): void }[] = [];
  const port: SkillPort = {
    list: (tenantId) =>
      new Promise<SkillEntry[]>((resolve) => {
        reads.push({ tenantId, answer: resolve });
      }),
    load: async () => undefined,
  };
  return { port, reads };
};

const setup = () => {
  const catalog = heldCatalog();
  const registry = createRegistry();
  registry.global.register(skillTool(catalog.port));
  const layers = createSkillLayers({
    skills: catalog.port,
    events: createMemoryEventLog(),
    agentsOf: async () => [],
  });
  const runtime = createRegistryRuntime(registry, { parentOf: layers.parentOf, ready: layers.ready });
  const agent: AgentScope = { id: 'agt_1', sessionId: 'agt_1', services: { tenantId: 't1' } };
  const tools = runtime.forAgent({ agent, preset: 'standard', mode: 'native', own: [], policies: [] });
  const skillDescription = async () => (await tools.describe()).find((t) => t.name === 'skill')?.description;
  return { catalog, layers, skillDescription };
};

describe('skill layers over an async catalog', () => {
  it("resolves an agent's tools only once its tenant's listing is in the layer", async () => {
    const { catalog, skillDescription } = setup();
    expect(catalog.reads.map((r) => r.tenantId)).toEqual(['t1']);
    let described: string | undefined;
    const pending = skillDescription().then((d) => {
      described = d;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(described).toBeUndefined();
    catalog.reads[0]?.answer([{ name: 'debugging', description: 'Find the cause' }]);
    await pending;
    expect(described).toContain('- debugging: Find the cause');
    // Read once: the next describe reads nothing.
    expect(await skillDescription()).toContain('- debugging');
    expect(catalog.reads).toHaveLength(1);
  });

  it('shows the newest listing even when an older read answers last', async () => {
    const { catalog, layers, skillDescription } = setup();
    const refreshed = layers.refresh('t1');
    await until(() => catalog.reads.length === 2, { what: 'the refresh reading the catalog' });
    // The refresh (the newer read) answers first, the first read after it.
    catalog.reads[1]?.answer([{ name: 'new-skill', description: 'after the change' }]);
    await refreshed;
    catalog.reads[0]?.answer([{ name: 'old-skill', description: 'before the change' }]);
    const description = await skillDescription();
    expect(description).toContain('- new-skill: after the change');
    expect(description).not.toContain('old-skill');
  });

  it('reloads a listing changed in another process, and reads nothing for a tenant never loaded', async () => {
    const { catalog, layers, skillDescription } = setup();
    catalog.reads[0]?.answer([{ name: 'debugging', description: 'Find the cause' }]);
    expect(await skillDescription()).toContain('- debugging');
    await layers.reload('t_elsewhere');
    expect(catalog.reads).toHaveLength(1);
    const reloaded = layers.reload('t1');
    await until(() => catalog.reads.length === 2);
    catalog.reads[1]?.answer([{ name: 'profiling', description: 'Find the slow part' }]);
    await reloaded;
    expect(await skillDescription()).toContain('- profiling: Find the slow part');
  });
});
