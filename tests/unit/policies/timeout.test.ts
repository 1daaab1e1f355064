import { getEventListeners } from 'node:events';
import * as v from 'valibot';
import { describe, expect, it, vi } from 'vitest';
import { defineRemoteTool } from '../../../host/agents/remote-tools.ts';
import type { McpRunner } from '../../../host/mcp-servers/runner.ts';
import { defineMcpTools } from '../../../host/mcp-servers/tools.ts';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { createMemoryRequestStore } from '../../../host/store/memory.ts';
import {
  bashTool,
  createPersistentBashTool,
  jobOutputTool,
  terminalSendTool,
  webFetchTool,
  webSearchTool,
} from '../../../host/tools/builtin/index.ts';
import { backstopTimeout, createRegistry, defineTool } from '../../../host/tools/index.ts';
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

  it("the caller's cancellation reaches a body under a deadline, and leaves no listener on the caller's signal", async () => {
    const registry = createRegistry();
    const seen: { aborted?: unknown } = {};
    const controller = new AbortController();
    let started = (): void => undefined;
    const running = new Promise<void>((r) => {
      started = r;
    });
    registry.global.register(
      defineTool({
        name: 'wait',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.string() },
        timeoutMs: 60_000,
        execute: (_args, exec) =>
          new Promise<string>((_resolve, reject) => {
            exec.signal.addEventListener('abort', () => {
              seen.aborted = exec.signal.reason;
              reject(exec.signal.reason);
            });
            started();
          }),
      }),
    );
    timeoutPolicy().install(registry.global);
    const pending = registry.global.execute([call('1', 'wait')], { agent, signal: controller.signal });
    await running;
    controller.abort(new Error('the client went away'));
    const [r] = await pending;
    expect(r?.error?.code).toBe('ABORTED');
    expect(seen.aborted).toMatchObject({ message: 'the client went away' });
    // Fast calls under a deadline, one after another on one caller signal: none leaves a listener.
    const caller = new AbortController();
    registry.global.register(sleeper(60_000, true, {}));
    for (let i = 0; i < 5; i++)
      expect(
        (
          await registry.global.execute([call(`f${i}`, 'sleep', { ms: 0 })], { agent, signal: caller.signal })
        )[0]?.ok,
      ).toBe(true);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
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

describe('tools that can hang declare a deadline the timeout policy enforces', () => {
  const never = () => new Promise<never>(() => undefined);

  it('bash, persistent bash, job_output, terminal_send, remote, MCP and web tools declare timeoutMs', () => {
    const requests = createMemoryRequestStore();
    const remote = defineRemoteTool(
      { name: 'client_tool', description: 'd', parameters: { type: 'object' }, timeoutMs: 1000 },
      requests,
    );
    const runner = {
      spec: { name: 's' },
      deadlineMs: 90_000,
      listing: () => ({ skipped: { count: 0, first: [] } }),
    } as unknown as McpRunner;
    const [mcp] = defineMcpTools(runner, [
      { name: 'fetch', description: 'd', inputSchema: { type: 'object' } },
    ]).definitions;
    expect(bashTool.timeoutMs).toBe(backstopTimeout(600_000));
    expect(createPersistentBashTool({ timeoutMs: 5000 }).timeoutMs).toBe(backstopTimeout(5000));
    expect(jobOutputTool.timeoutMs).toBe(backstopTimeout(600_000));
    expect(terminalSendTool.timeoutMs).toBe(backstopTimeout(15_000));
    expect(remote.timeoutMs).toBe(backstopTimeout(1000));
    expect(mcp?.timeoutMs).toBe(backstopTimeout(90_000));
    const web = { fetchPage: never, search: never, timeoutMs: 2000 };
    expect(webFetchTool(web).timeoutMs).toBe(backstopTimeout(2000));
    expect(webSearchTool(web).timeoutMs).toBe(backstopTimeout(2000));
    requests.close?.();
  });

  it('a bash call whose sandbox never answers ends with TOOL_TIMEOUT', async () => {
    vi.useFakeTimers();
    try {
      const registry = createRegistry();
      registry.global.register(bashTool);
      timeoutPolicy().install(registry.global);
      // A sandbox that hangs and ignores cancellation.
      const sandbox = { exec: never } as unknown as Sandbox;
      const hung = { ...agent, services: { sandbox } };
      const pending = registry.global.execute(
        [call('1', 'bash', { command: 'sleep 1', description: 'waits' })],
        { agent: hung },
      );
      await vi.advanceTimersByTimeAsync(backstopTimeout(600_000));
      const [r] = await pending;
      expect(r?.error?.code).toBe('TOOL_TIMEOUT');
    } finally {
      vi.useRealTimers();
    }
  });
});
