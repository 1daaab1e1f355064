// A plugin's CPU budget counts CPU, not the time its entry waits for a core. Under another
// tenant's load a well-behaved plugin (250 ms of work per call) was killed for "its CPU budget of
// 1000 ms": isolated-vm's `timeout` and `cpuTime` count wall-clock time while an isolate is
// entered. Guarantee: an entry that uses little CPU but much wall-clock time (here its worker
// process is stopped mid-entry, as a process starved of cores is) runs to its end; a busy loop
// still ends at the CPU budget with the CPU-budget error; an entry that holds its isolate past the
// separate wall-clock bound ends with that bound's error. Real worker processes, real isolated-vm.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginCapabilities, PluginLimits, PluginRuntime } from '../../../host/plugins/index.ts';
import { createPluginRuntime } from '../../../host/plugins/index.ts';
import { until } from '../../helpers/until.ts';
import { fakeAgent, OWNER } from '../plugins/helpers.ts';

/**
 * `go` says it entered (an agent call it does not await), then computes for at most 2 s of wall
 * clock; when it sees the clock jump by over 2 s (its process was stopped) it computes 300 ms more
 * and answers 'stopped'. At most 2.3 s of CPU either way: under the 3 s budget.
 */
const SPINNER = `return (ctx) => { ctx.tools.register({ name: 'go', parameters: { type: 'object' },
  execute(args, exec) {
    exec.call('entered', {}).catch(() => {});
    const start = Date.now();
    let last = start;
    let stoppedAt = 0;
    for (;;) {
      const now = Date.now();
      if (!stoppedAt && now - last > 2000) stoppedAt = now;
      if (stoppedAt && now - stoppedAt > 300) return 'stopped';
      if (!stoppedAt && now - start > 2000) return 'not stopped';
      last = now;
    }
  } }) }`;
/** Longer than the jump the spinner looks for, and than the CPU budget. */
const STOP_MS = 4_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A runtime with one plugin tenant and an agent whose `entered` calls wake the test. */
const harness = (limits: Partial<PluginLimits>) => {
  const runtime: PluginRuntime = createPluginRuntime({ limitsOf: () => limits });
  const agent = fakeAgent();
  let wake = () => {};
  const capabilities: PluginCapabilities = {
    ...agent.capabilities,
    callTool(request, signal) {
      if (request.name === 'entered') wake();
      return agent.capabilities.callTool(request, signal);
    },
  };
  let seq = 0;
  const start = async (source: string) => {
    const pluginId = `cpu${++seq}`;
    const result = await runtime.start({
      owner: OWNER,
      pluginId,
      packageId: `pkg_${pluginId}`,
      source,
      capabilities,
    });
    expect(result.ok).toBe(true);
    return pluginId;
  };
  /** Calls `go` and stops its worker process for `stopMs` once the entry runs; until that lands inside the entry. */
  const callStopped = async (stopMs: number) => {
    for (let attempt = 0; attempt < 10; attempt++) {
      const entered = new Promise<void>((resolve) => {
        wake = resolve;
      });
      const outcome = agent.call('go').then(
        (value) => ({ ok: true as const, value }),
        (error: { code: string }) => ({ ok: false as const, code: error.code }),
      );
      await entered;
      const [pid] = runtime.pids();
      process.kill(pid as number, 'SIGSTOP');
      try {
        await sleep(stopMs); // the starvation itself: the process gets no core for this long
      } finally {
        process.kill(pid as number, 'SIGCONT');
      }
      const result = await outcome;
      // The entry had ended before the stop landed (a slow machine): try again.
      if (result.ok && result.value === 'not stopped') continue;
      return result;
    }
    throw new Error('the stop never landed inside the entry');
  };
  return { runtime, agent, start, callStopped };
};

describe('plugin CPU budgets', () => {
  const { runtime, agent, start, callStopped } = harness({
    cpuMsPerCallback: 3_000,
    callbackWallMs: 30_000,
    callWallMs: 60_000,
    cpuMsPerMinute: 60_000,
  });
  let spinner: string;
  beforeAll(async () => {
    spinner = await start(SPINNER);
  });
  afterAll(() => runtime.close());

  it('do not charge an entry for the time it waits for a core', async () => {
    // 4 s without a core inside one entry, under 3 s of CPU: the plugin answers and runs on.
    expect(await callStopped(STOP_MS)).toEqual({ ok: true, value: 'stopped' });
    expect(runtime.status(OWNER, spinner)).toMatchObject({ state: 'running' });
    expect(await callStopped(STOP_MS)).toEqual({ ok: true, value: 'stopped' });
    expect(runtime.status(OWNER, spinner)).toMatchObject({ state: 'running', restarts: 0 });
  }, 120_000);

  it('end a busy loop at the CPU budget, with the CPU-budget error', async () => {
    const loop = await start(
      "return (ctx) => { ctx.tools.register({ name: 'loop', parameters: { type: 'object' }, execute() { for (;;) {} } }) }",
    );
    await expect(agent.call('loop')).rejects.toMatchObject({ code: 'ABORTED' });
    await until(() => runtime.status(OWNER, loop)?.state === 'failed', { what: 'the loop failed' });
    expect(runtime.status(OWNER, loop)?.error).toMatchObject({
      kind: 'timeout',
      message: 'a callback of the plugin ran longer than its CPU budget of 3000 ms',
    });
    // Its neighbour on the worker is untouched.
    expect(runtime.status(OWNER, spinner)).toMatchObject({ state: 'running', restarts: 0 });
  }, 60_000);
});

describe('the wall-clock bound of an entry', () => {
  const { runtime, start, callStopped } = harness({
    cpuMsPerCallback: 3_000,
    callbackWallMs: 3_000,
    callWallMs: 60_000,
  });
  afterAll(() => runtime.close());

  it('still ends an entry that holds its isolate past it without computing', async () => {
    const spinner = await start(SPINNER);
    expect(await callStopped(STOP_MS)).toEqual({ ok: false, code: 'ABORTED' });
    await until(() => runtime.status(OWNER, spinner)?.state === 'failed', { what: 'the plugin failed' });
    expect(runtime.status(OWNER, spinner)?.error).toMatchObject({
      kind: 'timeout',
      message: 'a callback of the plugin held its isolate longer than its wall-clock bound of 3000 ms',
    });
  }, 60_000);
});
