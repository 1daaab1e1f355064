import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import {
  createRegistry,
  defineTool,
  type Executor,
  type PtcExecutor,
  type ToolDefinition,
  type ToolResult,
} from '../../../host/tools/index.ts';
import { agent, call, echoTool } from './helpers.ts';

/** A stand-in for the code-mode executor: one run_code schema listing the tools; programs are JSON lists of calls. */
const fakePtc = (): PtcExecutor => {
  const runCode: ToolDefinition = defineTool({
    name: 'run_code',
    description: 'Run a program',
    parameters: v.object({ code: v.string(), description: v.string() }),
    output: { schema: v.array(v.unknown()) },
    async execute(args, exec) {
      const steps = JSON.parse(args.code) as { name: string; args: unknown }[];
      const results: ToolResult[] = await Promise.all(steps.map((s) => exec.callTool(s.name, s.args)));
      return results.map((r) => (r.ok ? r.value : `failed: ${r.error?.code}`));
    },
  });
  return {
    name: 'fake-ptc',
    kind: 'ptc',
    describe: (definitions) => [
      {
        name: 'run_code',
        description: `SDK: ${definitions.map((d) => d.name).join(',')}`,
        parameters: runCode.parameters,
      },
    ],
    execute: (batch) => batch.run(batch.calls, { definition: runCode }),
  };
};

const program = (steps: unknown) => ({ code: JSON.stringify(steps), description: 'test' });

describe('executors and presentation modes', () => {
  const setup = () => {
    const registry = createRegistry();
    registry.global.register(echoTool('read'));
    registry.global.register(echoTool('grep'));
    const preset = registry.scope('preset:code');
    preset.mount(fakePtc());
    return { registry, preset, scope: preset.child('agent') };
  };

  it('native mode shows every visible tool as itself', () => {
    const { registry, scope } = setup();
    expect(registry.surface(scope, 'native').map((s) => s.name)).toEqual(['read', 'grep']);
  });

  it('code mode shows only run_code, whose description embeds the visible tools', () => {
    const { scope } = setup();
    scope.restrict({ deny: ['grep'] });
    expect(scope.surface('code')).toEqual([
      { name: 'run_code', description: 'SDK: read', parameters: expect.any(Object) },
    ]);
  });

  it('both mode shows native schemas and run_code', () => {
    const { scope } = setup();
    expect(scope.surface('both').map((s) => s.name)).toEqual(['read', 'grep', 'run_code']);
  });

  it('a code-mode program re-enters the pipeline for each binding call', async () => {
    const { scope } = setup();
    const denied: string[] = [];
    scope.on('tools/pre-execute', (c) => {
      if (c.name !== 'grep') return undefined;
      denied.push(c.parentCallId ?? '');
      return { kind: 'deny', reason: 'no grep' };
    });
    const [r] = await scope.execute(
      [
        call(
          'p1',
          'run_code',
          program([
            { name: 'read', args: { text: 'a' } },
            { name: 'grep', args: { text: 'b' } },
            { name: 'read', args: { text: 1 } },
          ]),
        ),
      ],
      { agent, mode: 'code' },
    );
    expect(r?.value).toEqual(['a', 'failed: DENIED', 'failed: INVALID_ARGUMENTS']);
    expect(denied).toEqual(['p1']);
  });

  it('in code mode native calls are refused with a hint; in native mode run_code is unknown', async () => {
    const { scope } = setup();
    const [code] = await scope.execute([call('1', 'read', { text: 'a' })], { agent, mode: 'code' });
    expect(code?.error?.code).toBe('UNKNOWN_TOOL');
    expect(code?.error?.message).toMatch(/tools\.read\(\)/);
    const [native] = await scope.execute([call('2', 'run_code', program([]))], { agent, mode: 'native' });
    expect(native?.error?.code).toBe('UNKNOWN_TOOL');
  });

  it('both mode runs native calls and programs in one batch, results in model order', async () => {
    const { scope } = setup();
    const results = await scope.execute(
      [
        call('1', 'read', { text: 'a' }),
        call('2', 'run_code', program([{ name: 'grep', args: { text: 'b' } }])),
        call('3', 'grep', { text: 'c' }),
      ],
      { agent, mode: 'both' },
    );
    expect(results.map((r) => [r.id, r.value])).toEqual([
      ['1', 'a'],
      ['2', ['b']],
      ['3', 'c'],
    ]);
  });

  it('the nearest mounted executor wins; a duplicate in one scope fails with DUPLICATE_EXECUTOR', async () => {
    const { preset, scope } = setup();
    expect(() => preset.mount(fakePtc())).toThrow(expect.objectContaining({ code: 'DUPLICATE_EXECUTOR' }));
    const custom: Executor = {
      name: 'shouty',
      kind: 'native',
      describe: (defs) =>
        defs.map((d) => ({
          name: d.name,
          description: d.description.toUpperCase(),
          parameters: d.parameters,
        })),
      execute: (batch) => batch.run(batch.calls),
    };
    const dispose = scope.mount(custom);
    expect(scope.surface('native')[0]?.description).toBe('ECHO (READ)');
    expect(preset.surface('native')[0]?.description).toBe('Echo (read)');
    dispose();
    expect(scope.surface('native')[0]?.description).toBe('Echo (read)');
  });

  it('code mode without a PTC executor fails with NO_EXECUTOR', async () => {
    const registry = createRegistry();
    expect(() => registry.global.surface('code')).toThrow(expect.objectContaining({ code: 'NO_EXECUTOR' }));
    await expect(
      registry.global.execute([call('1', 'run_code', program([]))], { agent, mode: 'code' }),
    ).rejects.toMatchObject({ code: 'NO_EXECUTOR' });
  });

  it('schemas carry only name, description and parameters; deferLoading survives surface projection', () => {
    const registry = createRegistry();
    registry.global.register(
      defineTool({
        name: 'lazy',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.null() },
        execute: () => null,
        deferLoading: true,
        timeoutMs: 5,
      }),
    );
    expect(Object.keys(registry.schemas(registry.global)[0] ?? {})).toEqual([
      'name',
      'description',
      'parameters',
    ]);
    expect(registry.surface(registry.global, 'native')[0]?.deferLoading).toBe(true);
  });
});
