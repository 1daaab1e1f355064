// The composed service (assembleAgents) with a real isolate host: workflow and ralph are installed
// with code mode, offered per agent by `subagents`, and in code mode they are tools.* bindings.
import { afterAll, describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';

const isolates = createIsolateHost({ workers: 1, prewarm: 1 });
const store = openStore({ path: ':memory:' });
const { agents } = assembleAgents({ store, sandboxes: createMemoryProvider(), isolates });
const tenant = (await store.tenants.createTenant('t')).id;
afterAll(async () => {
  await agents.close(0);
  store.close();
  await isolates.close();
});

const names = async (input: Parameters<typeof agents.create>[1]) =>
  (await agents.tools(await agents.create(tenant, input))).tools;

describe('assembled workflow tools', () => {
  it('are offered only with subagents: true, in the presets that fit', async () => {
    expect((await names({})).map((t) => t.name)).not.toContain('workflow');
    const offered = await names({ subagents: true });
    expect(offered.map((t) => t.name)).toEqual(expect.arrayContaining(['workflow', 'ralph']));
    const workflow = offered.find((t) => t.name === 'workflow');
    expect(workflow?.description).toContain('At most 64 agent() calls per workflow, 8 at a time.');
    expect(Object.keys(workflow?.parameters.properties as object)).toEqual(['script', 'meta', 'args']);
    expect((await names({ preset: 'creator', subagents: true })).map((t) => t.name)).toContain('ralph');
    expect((await names({ preset: 'minimal', subagents: true })).map((t) => t.name)).not.toContain(
      'workflow',
    );
  });

  it('are tools.workflow() and tools.ralph() bindings in code mode', async () => {
    const [runCode] = await names({ preset: 'code', subagents: true });
    expect(runCode?.name).toBe('run_code');
    expect(runCode?.description).toContain('workflow(');
    expect(runCode?.description).toContain('ralph(');
    const [plain] = await names({ preset: 'code' });
    expect(plain?.description).not.toContain('workflow(');
  });
});
