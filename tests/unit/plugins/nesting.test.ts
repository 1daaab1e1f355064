// A plugin's own tool calls and its tools' results, held to what a direct call may carry (as a
// program's are: host/isolates/arguments.ts): prototype keys dropped, arguments nested past 64
// levels refused (INVALID_ARGUMENTS), results nested past 256 levels a failed call. Before, a
// plugin's call went to the pipeline as JSON.parse made it, and a result 5,000 levels deep reached
// the host's own JSON.stringify (a stack overflow answering POST /calls, as run_code's did).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginRuntime } from '../../../host/plugins/index.ts';
import { type FakeAgent, fakeAgent, run, startRuntime } from './helpers.ts';

const PLUGIN = `return {
  name: 'nesting',
  apply(ctx) {
    const deep = (n) => { let o = 1; for (let i = 0; i < n; i++) o = { a: o }; return o; };
    ctx.tools.register({
      name: 'calls',
      description: 'calls echo with hostile arguments',
      parameters: { type: 'object' },
      async execute(_args, exec) {
        const out = {};
        try { out.deep = await exec.call('echo', { x: deep(100) }); } catch (e) { out.deep = e.code + ' ' + e.message; }
        out.proto = await exec.call('echo', JSON.parse('{"a":1,"__proto__":{"p":1},"b":{"constructor":{"prototype":2}}}'));
        return out;
      },
    });
    ctx.tools.register({
      name: 'returns',
      description: 'returns a deep value',
      parameters: { type: 'object' },
      execute: () => deep(300),
    });
  },
}`;

describe('plugin values and arguments nested too deep', () => {
  let runtime: PluginRuntime;
  let agent: FakeAgent;
  beforeAll(async () => {
    runtime = startRuntime();
    agent = fakeAgent();
    expect((await run(runtime, agent, PLUGIN, 'nesting')).ok).toBe(true);
  });
  afterAll(() => runtime.close());

  it("refuses a plugin's deep arguments and drops its prototype keys before the agent's tools see them", async () => {
    const out = (await agent.call('calls')) as Record<string, unknown>;
    expect(out.deep).toMatch(/^INVALID_ARGUMENTS .*more than 64 levels deep/);
    expect(out.proto).toEqual({ a: 1, b: {} });
    expect(agent.calls.map((c) => c.args)).toEqual([{ a: 1, b: {} }]);
  });

  it('fails a call whose result nests past 256 levels', async () => {
    await expect(agent.call('returns')).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      message: expect.stringMatching(/nested more than 256 levels deep/),
    });
  });
});
