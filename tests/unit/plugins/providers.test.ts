// Inspection providers a plugin provides (ctx.inspect.provide) as the runtime's caller sees them:
// their methods run in the plugin's isolate with the input as JSON, errors come back as call
// errors while the plugin runs on, and they are bounded (names, methods, providers) and disposed
// with the plugin's scope: by their disposer, by an update and by a stop.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginRuntime } from '../../../host/plugins/index.ts';
import { type FakeAgent, fakeAgent, OWNER, run, startRuntime } from './helpers.ts';

const call = { callId: 'q1', signal: new AbortController().signal };

describe('plugin inspection providers', () => {
  let runtime: PluginRuntime;
  let agent: FakeAgent;
  beforeAll(() => {
    runtime = startRuntime({
      cpuMsPerCallback: 250,
      callWallMs: 2_000,
      startWallMs: 3_000,
      maxProviders: 2,
      maxProviderMethods: 3,
      maxValueBytes: 4096,
    });
    agent = fakeAgent();
  });
  afterAll(() => runtime.close());

  it('runs a method in the isolate; a throw or a too-big result is a call error and the plugin runs on', async () => {
    const { pluginId, ok } = await run(
      runtime,
      agent,
      `return { name: 's', apply(ctx) {
        let n = 0;
        ctx.inspect.provide('stats', {
          description: 'counts',
          count(input) { n += input.add; return { count: n }; },
          boom() { throw new RangeError('no stats today'); },
          big() { return 'x'.repeat(10000); },
        });
      } }`,
    );
    expect(ok).toBe(true);
    const stats = agent.providers.get('stats');
    expect(stats).toMatchObject({ pluginId, description: 'counts', methods: ['count', 'boom', 'big'] });
    expect(await stats?.query('count', { add: 2 }, call)).toEqual({ count: 2 });
    await expect(stats?.query('boom', null, call)).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      message: 'RangeError: no stats today',
    });
    await expect(stats?.query('big', null, call)).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      message: expect.stringMatching(/over the 4096-byte limit/),
    });
    await expect(stats?.query('nope', null, call)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await stats?.query('count', { add: 3 }, call)).toEqual({ count: 5 });
    await runtime.stop(OWNER, pluginId);
    expect(agent.providers.has('stats')).toBe(false);
  });

  it('bounds names, methods per provider and providers per plugin', async () => {
    const fails = async (body: string, message: RegExp) => {
      const result = await run(runtime, agent, `return { name: 'b', apply(ctx) { ${body} } }`);
      if (result.ok) throw new Error('the plugin started');
      expect(result.error.message).toMatch(message);
      expect(agent.providers.size).toBe(0);
    };
    await fails(`ctx.inspect.provide('no such', { a() {} });`, /a provider name is 1 to 64/);
    await fails(`ctx.inspect.provide('p', { 'a b'() {} });`, /a method name is 1 to 64/);
    await fails(`ctx.inspect.provide('p', { a() {}, b() {}, c() {}, d() {} });`, /at most 3 methods/);
    await fails(`ctx.inspect.provide('p', { a: 1 });`, /a is not a method/);
    await fails(
      `for (const p of ['p', 'q', 'r']) ctx.inspect.provide(p, { a() {} });`,
      /at most 2 inspection providers/,
    );
  });

  it('is disposed by its disposer and with the old package on update', async () => {
    const { pluginId } = await run(
      runtime,
      agent,
      `return { name: 'd', apply(ctx) {
        const off = ctx.inspect.provide('gone', { a() { return 1; } });
        ctx.inspect.provide('old', { a() { return 'old'; } });
        off();
      } }`,
    );
    expect([...agent.providers.keys()]).toEqual(['old']);
    const updated = await runtime.update(OWNER, pluginId, {
      packageId: 'pkg_new',
      source: `return { name: 'd', apply(ctx) { ctx.inspect.provide('new', { a() { return 'new'; } }); } }`,
    });
    expect(updated.ok).toBe(true);
    expect([...agent.providers.keys()]).toEqual(['new']);
    expect(await agent.providers.get('new')?.query('a', null, call)).toBe('new');
    await runtime.stop(OWNER, pluginId);
  });
});
