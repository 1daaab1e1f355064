// Steps (issue 17 §1, seed 003's step-owned set): a client describes the tools and calls against the
// same resolved set. A tool added, replaced or removed after the step is UNKNOWN_TOOL in the step's
// batches; the step serves several batches (retries); it expires, and an agent keeps a bounded number.
import { describe, expect, it } from 'vitest';
import { createRegistryRuntime } from '../../../host/agents/runtime.ts';
import type { StepOptions } from '../../../host/agents/steps.ts';
import { createRegistry } from '../../../host/tools/index.ts';
import { agent, call, echoTool } from '../tools/helpers.ts';

const setup = (steps: StepOptions = {}) => {
  const registry = createRegistry();
  const runtime = createRegistryRuntime(registry, { steps });
  const tools = runtime.forAgent({ agent, preset: 'minimal', mode: 'native', own: [], policies: [] });
  const signal = new AbortController().signal;
  const run = async (name: string, step?: string) =>
    (await tools.execute([call('c', name, { text: 'hi' })], signal, undefined, step))[0];
  return { tools, run };
};

describe('steps', () => {
  it('a step describes the set its calls run with: a tool added after it is refused, the rest runs', async () => {
    const { tools, run } = setup();
    tools.register(echoTool('before'));
    const step = await tools.step();
    expect(step.tools.map((t) => t.name)).toContain('before');
    tools.register(echoTool('after'));
    expect(await run('before', step.id)).toMatchObject({ ok: true, value: 'hi' });
    const late = await run('after', step.id);
    expect(late?.error?.code).toBe('UNKNOWN_TOOL');
    expect(late?.error?.message).toContain("not in this step's tool set");
    // Without a step each batch resolves its own set, which has the new tool.
    expect(await run('after')).toMatchObject({ ok: true });
  });

  it('a tool removed or replaced after the step is refused; the step serves several batches', async () => {
    const { tools, run } = setup();
    const removeGone = tools.register(echoTool('gone'));
    const removeSwapped = tools.register(echoTool('swapped'));
    tools.register(echoTool('kept'));
    const step = await tools.step();
    removeGone();
    removeSwapped();
    tools.register(echoTool('swapped', { description: 'a new registration' }));
    expect((await run('gone', step.id))?.error?.code).toBe('UNKNOWN_TOOL');
    expect((await run('swapped', step.id))?.error?.code).toBe('UNKNOWN_TOOL');
    expect(await run('kept', step.id)).toMatchObject({ ok: true });
    expect(await run('kept', step.id)).toMatchObject({ ok: true });
  });

  it('a step expires; an unknown one is STEP_NOT_FOUND', async () => {
    let now = 1_000;
    const { tools, run } = setup({ ttlMs: 60_000, now: () => now });
    tools.register(echoTool('echo'));
    const step = await tools.step();
    expect(step.expiresAt).toBe(61_000);
    expect(await run('echo', step.id)).toMatchObject({ ok: true });
    now = 61_000;
    await expect(run('echo', step.id)).rejects.toMatchObject({ code: 'STEP_NOT_FOUND' });
    await expect(run('echo', 'step_nope')).rejects.toMatchObject({ code: 'STEP_NOT_FOUND' });
  });

  it('an agent keeps its newest steps only', async () => {
    const { tools, run } = setup({ max: 2 });
    tools.register(echoTool('echo'));
    const first = await tools.step();
    const second = await tools.step();
    const third = await tools.step();
    await expect(run('echo', first.id)).rejects.toMatchObject({ code: 'STEP_NOT_FOUND' });
    expect(await run('echo', second.id)).toMatchObject({ ok: true });
    expect(await run('echo', third.id)).toMatchObject({ ok: true });
  });
});
