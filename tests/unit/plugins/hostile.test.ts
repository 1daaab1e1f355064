// Hostile plugins: loops in apply, in a listener and in a tool's execute; memory bombs; floods of
// emits, log lines, registrations, messages and calls; escape attempts from the host body. Each
// must end bounded — `failed` with the reason, or a clear error the plugin sees — and confined: a
// witness plugin started first, on the same worker process, keeps answering after every one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginFailureKind, PluginRuntime } from '../../../host/plugins/index.ts';
import {
  eventually,
  type FakeAgent,
  fakeAgent,
  OWNER,
  run,
  startRuntime,
  TEST_LIMITS,
  WITNESS,
} from './helpers.ts';

describe('hostile plugins', () => {
  let runtime: PluginRuntime;
  let agent: FakeAgent;
  let pings = 0;
  beforeAll(async () => {
    runtime = startRuntime();
    agent = fakeAgent({ 'a.txt': 'x' });
    expect((await run(runtime, agent, WITNESS, 'witness')).ok).toBe(true);
  });
  afterAll(() => runtime.close());

  /** The witness plugin still answers, and the worker process is the same one. */
  const witnessWorks = async (pids: number[]) => {
    expect(await agent.call('ping')).toBe(`pong ${++pings}`);
    expect(runtime.status(OWNER, 'witness')).toMatchObject({ state: 'running', restarts: 0 });
    expect(runtime.pids()).toEqual(pids);
  };

  const fails = async (source: string, kind: PluginFailureKind, message?: RegExp) => {
    const pids = runtime.pids();
    const { ok, status } = await run(runtime, agent, source);
    expect(ok).toBe(false);
    expect(status.state).toBe('failed');
    expect(status.tools).toEqual([]);
    expect(status.error?.kind).toBe(kind);
    if (message) expect(status.error?.message).toMatch(message);
    await witnessWorks(pids);
  };

  /** Starts `source` (which registers `go`), calls it, and returns the call's outcome and the plugin's status. */
  const callThenStatus = async (source: string, args = {}) => {
    const pids = runtime.pids();
    const { ok, pluginId } = await run(runtime, agent, source);
    expect(ok).toBe(true);
    const outcome = await agent.call('go', args).then(
      (value) => ({ ok: true as const, value }),
      (error: { code: string; message: string }) => ({
        ok: false as const,
        code: error.code,
        message: error.message,
      }),
    );
    await eventually(() => expect(runtime.status(OWNER, pluginId)?.state).not.toBe('starting'));
    const status = runtime.status(OWNER, pluginId);
    await witnessWorks(pids);
    await runtime.stop(OWNER, pluginId);
    return { outcome, status, pluginId };
  };

  it('an infinite loop in apply → failed (timeout)', async () => {
    await fails('return { apply() { for (;;) {} } }', 'timeout', /CPU budget of 250 ms/);
  });

  it('an infinite loop in the body itself, and after an await in apply → failed (timeout)', async () => {
    await fails('for (;;) {}', 'timeout');
    await fails("return async (ctx) => { await ctx.tools.call('echo', {}); for (;;) {} }", 'timeout');
  });

  it('a loop in an event listener → failed (timeout) when the event arrives', async () => {
    const pids = runtime.pids();
    const { pluginId } = await run(
      runtime,
      agent,
      "return (ctx) => { ctx.on('tools/result', () => { for (;;) {} }) }",
    );
    agent.emit('tools/result', { name: 'read', ok: true });
    await eventually(() => expect(runtime.status(OWNER, pluginId)?.error?.kind).toBe('timeout'));
    expect(runtime.status(OWNER, pluginId)?.state).toBe('failed');
    expect(agent.subscribers()).toBe(0);
    await witnessWorks(pids);
  });

  it("a loop in a tool's execute → the call fails, and the plugin fails (timeout)", async () => {
    const { outcome, status } = await callThenStatus(
      "return (ctx) => { ctx.tools.register({ name: 'go', execute() { for (;;) {} } }) }",
    );
    expect(outcome).toMatchObject({ ok: false, code: 'ABORTED' });
    expect(status).toMatchObject({ state: 'failed', error: { kind: 'timeout' }, tools: [] });
    expect(agent.tools.has('go')).toBe(false);
  });

  it('endless microtasks in execute → failed (timeout or memory)', async () => {
    const { status } = await callThenStatus(
      "return (ctx) => { ctx.tools.register({ name: 'go', execute() { const f = () => Promise.resolve().then(f); f(); return new Promise(() => {}) } }) }",
    );
    expect(['timeout', 'memory']).toContain(status?.error?.kind);
  });

  it('a growing heap → failed (memory)', async () => {
    await fails(
      'const keep = []; for (;;) keep.push(new Array(100000).fill(keep.length));',
      'memory',
      /16 MB/,
    );
  });

  it('a growing heap in execute → the call ends, the plugin fails (memory)', async () => {
    const { outcome, status } = await callThenStatus(
      "return (ctx) => { ctx.tools.register({ name: 'go', execute() { const keep = []; for (;;) keep.push(new Array(100000).fill(keep.length)) } }) }",
    );
    expect(outcome).toMatchObject({ ok: false, code: 'ABORTED' });
    // isolated-vm's callback budget counts wall time: on a starved machine it can end the loop
    // before the heap is full. Either way the call and the plugin end, bounded.
    expect(status?.state).toBe('failed');
    expect(['memory', 'timeout']).toContain(status?.error?.kind);
  });

  it('array buffers past the limit → a clear error in the plugin, or memory', async () => {
    const { outcome, status } = await callThenStatus(
      "return (ctx) => { ctx.tools.register({ name: 'go', execute() { const keep = []; for (;;) keep.push(new Float64Array(1 << 16).fill(1)) } }) }",
    );
    expect(outcome.ok).toBe(false);
    if (status?.state === 'running')
      expect(outcome).toMatchObject({ message: 'RangeError: Array buffer allocation failed' });
    else expect(['memory', 'timeout']).toContain(status?.error?.kind); // timeout: see above
  });

  it('an emit flood is a loop like any other → failed (timeout)', async () => {
    await fails(
      "return (ctx) => { let n = 0; ctx.on('x', () => n++); for (;;) ctx.emit('x', n) }",
      'timeout',
    );
  });

  it('a log flood is cut to its budget and said so; the plugin runs on', async () => {
    const pids = runtime.pids();
    const { ok, status } = await run(
      runtime,
      agent,
      "return (ctx) => { for (let i = 0; i < 100000; i++) ctx.logger.info('line ' + i + ' ' + 'x'.repeat(5000)) }",
    );
    expect(ok).toBe(true);
    expect(status.logs).toHaveLength(101);
    expect(status.logs[0]?.text).toHaveLength(2000);
    expect(status.logs.at(-1)?.text).toBe(
      'logger: more than 100 lines in one callback; the rest of them are dropped',
    );
    await witnessWorks(pids);
  });

  it('a registration flood stops at the tool cap with a clear error', async () => {
    const { outcome, status } = await callThenStatus(
      `return (ctx) => {
        const disposers = [];
        let error = '';
        try { for (;;) disposers.push(ctx.tools.register({ name: 't' + disposers.length, execute: () => 1 })) }
        catch (e) { error = e.name + ': ' + e.message }
        const n = disposers.length;
        disposers.pop()();
        ctx.tools.register({ name: 'go', execute: () => ({ n, error }) });
      }`,
    );
    expect(outcome).toEqual({
      ok: true,
      value: { n: 32, error: 'RangeError: a plugin may have at most 32 tools registered at once' },
    });
    expect(status?.tools).toHaveLength(32);
  });

  it('a register/dispose churn past the message budget → failed (limit)', async () => {
    await fails(
      "return (ctx) => { for (;;) ctx.tools.register({ name: 'churn', execute: () => 1 })() }",
      'limit',
      /more than 1000 messages/,
    );
  });

  it('a call flood is refused past the calls in flight, with a clear error', async () => {
    const { outcome } = await callThenStatus(
      `return (ctx) => { ctx.tools.register({ name: 'go', async execute() {
        const calls = [];
        for (let i = 0; i < 100; i++) calls.push(ctx.tools.call('wait', {}).then(() => 'ok', (e) => e.message));
        return { settled: await Promise.all(calls.slice(16)) };
      } }) }`,
    );
    expect(outcome).toMatchObject({ ok: true });
    const settled = (outcome as unknown as { value: { settled: string[] } }).value.settled;
    expect(settled).toHaveLength(84);
    expect(new Set(settled)).toEqual(new Set(['more than 16 tool calls in flight; await some first']));
    agent.release();
  });

  it('escape attempts find nothing but the isolate', async () => {
    const { outcome } = await callThenStatus(
      `return (ctx) => { ctx.tools.register({ name: 'go', async execute() {
        const tries = {};
        const attempt = (name, fn) => { try { const v = fn(); tries[name] = v === undefined ? 'undefined' : String(typeof v === 'object' ? Object.keys(v).slice(0, 5) : v).slice(0, 80) } catch (e) { tries[name] = 'threw ' + e.name } };
        attempt('constructor chain', () => this.constructor.constructor('return typeof process')());
        attempt('ctx function constructor', () => ctx.on.constructor('return typeof process + typeof require')());
        attempt('tools constructor', () => ctx.tools.register.constructor('return typeof globalThis.process')());
        attempt('require', () => typeof require);
        attempt('process', () => typeof process);
        attempt('Buffer', () => typeof Buffer);
        attempt('fetch', () => typeof fetch);
        attempt('setTimeout', () => typeof setTimeout);
        attempt('WebAssembly', () => typeof WebAssembly);
        attempt('SharedArrayBuffer', () => typeof SharedArrayBuffer);
        attempt('ivm globals', () => Object.getOwnPropertyNames(globalThis).filter((k) => /^(_?ivm.*|Reference|Callback|Isolate|ExternalCopy|Context|Script|Module)$/.test(k)).join(',') || 'none');
        attempt('stack frames', () => { try { null.x } catch (e) { return /\\/work|node_modules|\\.ts/.test(e.stack) ? 'host paths' : 'clean' } });
        try { await import('node:fs'); tries.import = 'imported' } catch (e) { tries.import = 'threw ' + e.name }
        try { await eval('import("fs")'); tries.evalImport = 'imported' } catch (e) { tries.evalImport = 'threw ' + e.name }
        return tries;
      } }) }`,
    );
    expect(outcome).toEqual({
      ok: true,
      value: {
        'constructor chain': 'undefined',
        'ctx function constructor': 'undefinedundefined',
        'tools constructor': 'undefined',
        require: 'undefined',
        process: 'undefined',
        Buffer: 'undefined',
        fetch: 'undefined',
        setTimeout: 'undefined',
        WebAssembly: 'undefined',
        SharedArrayBuffer: 'undefined',
        'ivm globals': 'none',
        'stack frames': 'clean',
        import: expect.stringMatching(/^threw /),
        evalImport: expect.stringMatching(/^threw /),
      },
    });
  });

  it('new Array(2**31).fill(0) → failed (memory or crash); the witness is running again', async () => {
    const { ok, status } = await run(runtime, agent, 'new Array(2 ** 31).fill(0); return () => {}');
    expect(ok).toBe(false);
    expect(['memory', 'crash', 'timeout']).toContain(status.error?.kind);
    // If the bomb took its worker process down, the idle witness was started again from its package.
    await eventually(() => expect(runtime.status(OWNER, 'witness')?.state).toBe('running'), 15_000);
    await eventually(async () => expect(await agent.call('ping')).toMatch(/^pong \d+$/), 5_000);
    expect(process.memoryUsage().rss).toBeLessThan(1024 * 1024 * 1024);
  });
});

describe('a plugin that keeps every callback just under its budget', () => {
  let runtime: PluginRuntime;
  const agent = fakeAgent();
  beforeAll(() => {
    runtime = startRuntime({ ...TEST_LIMITS, cpuMsPerMinute: 600 });
  });
  afterAll(() => runtime.close());

  it('is stopped by its CPU share over time (timeout), however short each callback', async () => {
    // 150 ms of CPU per call, under the 250 ms per callback: only the share over time can stop it.
    const { ok, pluginId } = await run(
      runtime,
      agent,
      "return (ctx) => { ctx.tools.register({ name: 'go', execute() { const end = Date.now() + 150; while (Date.now() < end) {} return 'done' } }) }",
    );
    expect(ok).toBe(true);
    const outcomes: string[] = [];
    for (let i = 0; i < 20 && runtime.status(OWNER, pluginId)?.state === 'running'; i++)
      outcomes.push(await agent.call('go').then(String, (error: { code: string }) => error.code));
    await eventually(() => expect(runtime.status(OWNER, pluginId)?.state).toBe('failed'));
    expect(runtime.status(OWNER, pluginId)?.error).toMatchObject({
      kind: 'timeout',
      message: expect.stringContaining('share of 600 ms per minute'),
    });
    // It ran a few calls first (600 ms of share is four of them), then no more.
    expect(outcomes.filter((o) => o === 'done').length).toBeGreaterThanOrEqual(3);
    expect(outcomes.length).toBeLessThan(20);
  });
});
