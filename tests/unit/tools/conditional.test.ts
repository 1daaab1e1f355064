import { describe, expect, it } from 'vitest';
import { createRegistry } from '../../../host/tools/index.ts';
import { agent, call, echoTool } from './helpers.ts';

describe('conditional tools and resolve()', () => {
  it('a condition is evaluated once per resolve, with the agent and model selection', async () => {
    const registry = createRegistry();
    const seen: unknown[] = [];
    registry.global.register(echoTool('vision'), {
      when: ({ agent: a, modelSelection }) => {
        seen.push([a.id, modelSelection?.model]);
        return modelSelection?.model === 'big';
      },
    });
    const scope = registry.global;
    const on = await scope.resolve({ agent, modelSelection: { model: 'big' } });
    const off = await scope.resolve({ agent, modelSelection: { model: 'small' } });
    expect(seen).toEqual([
      ['agent-1', 'big'],
      ['agent-1', 'small'],
    ]);
    expect(scope.schemas(on).map((s) => s.name)).toEqual(['vision']);
    expect(scope.schemas(off)).toEqual([]);
    expect(scope.surface('native', on).map((s) => s.name)).toEqual(['vision']);
    const [r1] = await scope.execute([call('1', 'vision', { text: 'a' })], { agent, toolSet: on });
    const [r2] = await scope.execute([call('2', 'vision', { text: 'a' })], { agent, toolSet: off });
    expect(r1?.ok).toBe(true);
    expect(r2?.error?.code).toBe('UNKNOWN_TOOL');
    expect(seen).toHaveLength(2);
  });

  it('a throwing condition fails step preparation with TOOL_ACTIVATION_FAILED', async () => {
    const registry = createRegistry();
    registry.global.register(echoTool('flaky'), {
      when: () => {
        throw new Error('no model info');
      },
    });
    await expect(registry.global.resolve({ agent })).rejects.toMatchObject({
      code: 'TOOL_ACTIVATION_FAILED',
    });
  });

  it('conditional calls in a batch without a resolved set are UNKNOWN_TOOL', async () => {
    const registry = createRegistry();
    registry.global.register(echoTool('cond'), { when: () => true });
    registry.global.register(echoTool('plain'));
    const [a, b] = await registry.global.execute(
      [call('1', 'cond', { text: 'x' }), call('2', 'plain', { text: 'x' })],
      { agent },
    );
    expect(a?.error?.code).toBe('UNKNOWN_TOOL');
    expect(b?.ok).toBe(true);
  });

  it('without a set, get/definitions show conditional tools but executable excludes them', () => {
    const registry = createRegistry();
    registry.global.register(echoTool('cond'), { when: () => false });
    expect(registry.get('cond', registry.global)).toBeDefined();
    expect(registry.definitions(registry.global).map((d) => d.name)).toEqual(['cond']);
    expect(registry.executable('cond', registry.global)).toBeUndefined();
  });

  it('calls of a disposed set fail before they start', async () => {
    const registry = createRegistry();
    registry.global.register(echoTool('plain'));
    const set = await registry.global.resolve({ agent });
    set.dispose();
    const [r] = await registry.global.execute([call('1', 'plain', { text: 'x' })], { agent, toolSet: set });
    expect(r?.ok).toBe(false);
    expect(r?.error?.code).toBe('ABORTED_BEFORE_DISPATCH');
  });

  it('a same-name replacement after resolve makes calls with the old set fail', async () => {
    const registry = createRegistry();
    const dispose = registry.global.register(echoTool('tool', { description: 'v1' }));
    const set = await registry.global.resolve({ agent });
    dispose();
    registry.global.register(echoTool('tool', { description: 'v2' }));
    const [r] = await registry.global.execute([call('1', 'tool', { text: 'x' })], { agent, toolSet: set });
    expect(r?.error?.code).toBe('UNKNOWN_TOOL');
    const fresh = await registry.global.resolve({ agent });
    const [ok] = await registry.global.execute([call('2', 'tool', { text: 'x' })], { agent, toolSet: fresh });
    expect(ok?.ok).toBe(true);
  });

  it('a restriction added mid-batch stops calls that have not started yet', async () => {
    const registry = createRegistry();
    const scope = registry.global.child('agent');
    let lift: (() => void) | undefined;
    const { defineTool } = await import('../../../host/tools/index.ts');
    const v = await import('valibot');
    registry.global.register(
      defineTool({
        name: 'first',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.null() },
        execute: () => {
          lift = scope.restrict({ deny: ['second'] });
          return null;
        },
      }),
    );
    registry.global.register(echoTool('second'));
    const set = await scope.resolve({ agent });
    const [a, b] = await scope.execute([call('1', 'first'), call('2', 'second', { text: 'x' })], {
      agent,
      toolSet: set,
    });
    expect(a?.ok).toBe(true);
    expect(b?.error?.code).toBe('UNKNOWN_TOOL');
    lift?.();
  });

  it('a set resolved for one scope admits nothing in another', async () => {
    const registry = createRegistry();
    registry.global.register(echoTool('plain'));
    const a = registry.global.child('a');
    const b = registry.global.child('b');
    const set = await a.resolve({ agent });
    expect(b.executable('plain', set)).toBeUndefined();
    expect(a.executable('plain', set)).toBeDefined();
  });
});
