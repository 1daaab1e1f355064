import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { createRegistry, defineTool } from '../../../host/tools/index.ts';
import { timeoutPolicy } from '../../../policies/index.ts';
import { agent, call } from '../tools/helpers.ts';

const sleeper = (timeoutMs: number | undefined, honour: boolean, seen: { aborted?: unknown }) =>
  defineTool({
    name: 'sleep',
    description: 'd',
    parameters: v.object({ ms: v.number() }),
    output: { schema: v.string() },
    timeoutMs,
    execute: (args, exec) =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => resolve('woke'), args.ms);
        exec.signal.addEventListener('abort', () => {
          seen.aborted = exec.signal.reason;
          if (honour) {
            clearTimeout(timer);
            reject(exec.signal.reason);
          }
        });
      }),
  });

describe('timeoutPolicy', () => {
  it("a call past the definition's timeoutMs is TOOL_TIMEOUT and its signal is aborted", async () => {
    const registry = createRegistry();
    const seen: { aborted?: unknown } = {};
    registry.global.register(sleeper(20, true, seen));
    timeoutPolicy().install(registry.global);
    const [r] = await registry.global.execute([call('1', 'sleep', { ms: 1000 })], { agent });
    expect(r?.error).toEqual({ code: 'TOOL_TIMEOUT', message: 'Tool sleep timed out after 20 ms' });
    expect(r?.content).toEqual([{ type: 'text', text: 'Error: Tool sleep timed out after 20 ms' }]);
    expect(seen.aborted).toMatchObject({ code: 'TOOL_TIMEOUT' });
  });

  it('a body that ignores cancellation does not hold the call past its deadline', async () => {
    const registry = createRegistry();
    registry.global.register(sleeper(20, false, {}));
    timeoutPolicy().install(registry.global);
    const started = performance.now();
    const [r] = await registry.global.execute([call('1', 'sleep', { ms: 500 })], { agent });
    expect(r?.error?.code).toBe('TOOL_TIMEOUT');
    expect(performance.now() - started).toBeLessThan(300);
  });

  it('timeoutMs is declarative only: without the policy nothing is enforced', async () => {
    const registry = createRegistry();
    registry.global.register(sleeper(5, true, {}));
    const [r] = await registry.global.execute([call('1', 'sleep', { ms: 30 })], { agent });
    expect(r?.ok).toBe(true);
  });

  it('defaultMs applies to tools that declare no deadline; fast calls are unaffected', async () => {
    const registry = createRegistry();
    registry.global.register(sleeper(undefined, true, {}));
    timeoutPolicy({ defaultMs: 20 }).install(registry.global);
    const [slow, fast] = await registry.global.execute(
      [call('1', 'sleep', { ms: 1000 }), call('2', 'sleep', { ms: 1 })],
      { agent },
    );
    expect(slow?.error?.code).toBe('TOOL_TIMEOUT');
    expect(fast?.ok).toBe(true);
  });

  it('TOOL_TIMEOUT stays TOOL_TIMEOUT even when the caller cancels too', async () => {
    const registry = createRegistry();
    registry.global.register(sleeper(10, false, {}));
    timeoutPolicy().install(registry.global);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 15);
    const [r] = await registry.global.execute([call('1', 'sleep', { ms: 40 })], {
      agent,
      signal: controller.signal,
    });
    expect(r?.error?.code).toBe('TOOL_TIMEOUT');
  });

  it('invalid config fails at install time with CONFIG_INVALID', () => {
    expect(() => timeoutPolicy({ defaultMs: -5 })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
    expect(() => timeoutPolicy({ defaultMS: 5 } as never)).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
  });
});
