import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { createRegistry, defineTool } from '../../../host/tools/index.ts';
import { timeoutPolicy } from '../../../policies/index.ts';
import { agent, call } from '../tools/helpers.ts';

const sleeper = (
  timeoutMs: number | undefined,
  honour: boolean,
  seen: { aborted?: unknown },
  onAbort = (): void => undefined,
) =>
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
          onAbort();
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
    // The body ignores its signal and ends only when released; the release on a 5 s timer turns a
    // call that waited for the body into a failure below rather than a hang.
    let release = (): void => undefined;
    let bodyEnded = false;
    registry.global.register(
      defineTool({
        name: 'stuck',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.string() },
        timeoutMs: 20,
        execute: () =>
          new Promise<string>((resolve) => {
            release = () => resolve('woke');
          }).finally(() => {
            bodyEnded = true;
          }),
      }),
    );
    timeoutPolicy().install(registry.global);
    const guard = setTimeout(() => release(), 5_000);
    const [r] = await registry.global.execute([call('1', 'stuck')], { agent });
    expect(r?.error?.code).toBe('TOOL_TIMEOUT');
    expect(bodyEnded).toBe(false);
    clearTimeout(guard);
    release();
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
    const controller = new AbortController();
    // The caller cancels as soon as the body sees the timeout, before the call has answered.
    registry.global.register(sleeper(10, false, {}, () => controller.abort()));
    timeoutPolicy().install(registry.global);
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
