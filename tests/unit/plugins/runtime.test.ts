// The plugin runtime as a caller (the cordis_* tools) sees it: start a package's host body in an
// isolate of its own, its tools registered and run there, calls back into the agent's tools,
// update with Cordis HMR semantics, stop, and the Cordis-shaped context the plugin gets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginRuntime, PluginStatus } from '../../../host/plugins/index.ts';
import { createPluginRuntime } from '../../../host/plugins/index.ts';
import {
  eventually,
  type FakeAgent,
  fakeAgent,
  OWNER,
  run,
  startRuntime,
  TEST_LIMITS,
  WORD_COUNT,
} from './helpers.ts';

describe('plugin runtime', () => {
  let runtime: PluginRuntime;
  let agent: FakeAgent;
  const changes: PluginStatus[] = [];
  beforeAll(() => {
    runtime = createPluginRuntime({
      limitsOf: () => TEST_LIMITS,
      onStateChange: (_owner, status) => changes.push(status),
    });
    agent = fakeAgent({ 'notes.txt': 'the quick brown fox', 'b.txt': 'one two' });
  });
  afterAll(() => runtime.close());

  it('starts a plugin that registers a tool, and runs its execute in the isolate', async () => {
    const { ok, status, pluginId } = await run(runtime, agent, WORD_COUNT);
    expect(ok).toBe(true);
    expect(status).toMatchObject({ state: 'running', name: 'words', tools: ['count_words'] });
    expect(status.logs.map((l) => l.text)).toEqual(['[words] counting words']);
    const tool = agent.tools.get('count_words');
    expect(tool).toMatchObject({
      pluginId,
      description: 'Counts the words of a file',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      concurrencySafe: false,
    });
    expect(await agent.call('count_words', { path: 'notes.txt' })).toEqual({ words: 4 });
    // States were told as they changed (what the service persists for a restart).
    expect(changes.filter((c) => c.pluginId === pluginId).map((c) => c.state)).toEqual([
      'starting',
      'running',
    ]);
    await runtime.stop(OWNER, pluginId);
  });

  it("calls the agent's tools through the caller's callback, linked to the plugin tool call", async () => {
    const { pluginId } = await run(runtime, agent, WORD_COUNT);
    const before = agent.calls.length;
    const value = await agent.call('count_words', { path: 'b.txt' });
    expect(value).toEqual({ words: 2 });
    const inner = agent.calls.slice(before);
    expect(inner).toHaveLength(1);
    expect(inner[0]).toMatchObject({
      name: 'read',
      args: { file_path: 'b.txt' },
      parentCallId: expect.stringMatching(/^call_/),
    });
    // A failing agent tool reaches the plugin as an error with the tool's code.
    await expect(agent.call('count_words', { path: 'missing.txt' })).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      message: 'ToolError: no file missing.txt',
    });
    await runtime.stop(OWNER, pluginId);
  });

  it('calls made outside a tool call (apply, listeners) carry no parent', async () => {
    const before = agent.calls.length;
    const { ok, pluginId } = await run(
      runtime,
      agent,
      `return async (ctx) => { const r = await ctx.tools.call('echo', { at: 'apply' }); ctx.logger.info(JSON.stringify(r)); }`,
    );
    expect(ok).toBe(true);
    expect(agent.calls.slice(before)).toEqual([
      expect.objectContaining({ name: 'echo', args: { at: 'apply' } }),
    ]);
    expect(agent.calls.at(-1)?.parentCallId).toBeUndefined();
    expect(runtime.status(OWNER, pluginId)?.logs.at(-1)?.text).toBe('[anonymous] {"at":"apply"}');
    await runtime.stop(OWNER, pluginId);
  });

  it("reports a tool's throw, an unserialisable result and its wall clock as call errors; the plugin runs on", async () => {
    const { pluginId } = await run(
      runtime,
      agent,
      `return { name: 'errs', apply(ctx) {
        ctx.tools.register({ name: 'throws', execute() { throw new TypeError('bad input') } });
        ctx.tools.register({ name: 'cyclic', execute() { const a = {}; a.a = a; return a } });
        ctx.tools.register({ name: 'waits', async execute(args, exec) { await exec.call('wait', {}); return 'never' } });
        ctx.tools.register({ name: 'fine', execute: () => 'fine' });
      } }`,
    );
    await expect(agent.call('throws')).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      message: 'TypeError: bad input',
    });
    await expect(agent.call('cyclic')).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      message: 'TypeError: the result is not JSON-serialisable',
    });
    const before = agent.calls.length;
    await expect(agent.call('waits')).rejects.toMatchObject({ code: 'TOOL_TIMEOUT' });
    // The inner call the plugin was waiting on is cancelled with it.
    expect(agent.calls[before]?.signal.aborted).toBe(true);
    await expect(agent.call('fine')).resolves.toBe('fine');
    const aborted = new AbortController();
    const pending = agent.call('waits', {}, aborted.signal);
    aborted.abort();
    await expect(pending).rejects.toMatchObject({ code: 'ABORTED' });
    expect(runtime.status(OWNER, pluginId)?.state).toBe('running');
    await runtime.stop(OWNER, pluginId);
  });

  it('update swaps the behaviour and disposes the old package’s effects first', async () => {
    const version = (n: number) => `return { name: 'v${n}', apply(ctx) {
      ctx.effect(() => { ctx.logger.info('effect ${n} on'); return () => ctx.logger.info('effect ${n} off') });
      ctx.on('dispose', () => ctx.logger.info('dispose ${n}'));
      ctx.tools.register({ name: 'version', execute: () => ${n} });
      ctx.tools.register({ name: 'only_v${n}', execute: () => ${n} });
    } }`;
    const { pluginId } = await run(runtime, agent, version(1));
    expect(await agent.call('version')).toBe(1);
    const updated = await runtime.update(OWNER, pluginId, { packageId: 'pkg_v2', source: version(2) });
    expect(updated).toMatchObject({
      ok: true,
      status: { state: 'running', packageId: 'pkg_v2', name: 'v2' },
    });
    expect(await agent.call('version')).toBe(2);
    expect(agent.tools.has('only_v1')).toBe(false);
    expect(agent.tools.has('only_v2')).toBe(true);
    const texts = updated.status.logs.map((l) => l.text);
    // Old effects were undone (newest first) before the new package applied.
    expect(texts.slice(texts.indexOf('[v1] effect 1 on'))).toEqual([
      '[v1] effect 1 on',
      `runtime: updating from pkg_p${pluginId.slice(1)} to pkg_v2`,
      '[v1] dispose 1',
      '[v1] effect 1 off',
      '[v2] effect 2 on',
    ]);
    await runtime.stop(OWNER, pluginId);
  });

  it('a failed update loads the old package again, as Cordis HMR does', async () => {
    const { pluginId } = await run(
      runtime,
      agent,
      `return { name: 'stable', apply(ctx) { ctx.tools.register({ name: 'stable', execute: () => 'old' }) } }`,
    );
    const broken = `return { name: 'broken', apply(ctx) {
      ctx.tools.register({ name: 'stable', execute: () => 'new' });
      throw new Error('cannot start');
    } }`;
    const updated = await runtime.update(OWNER, pluginId, { packageId: 'pkg_broken', source: broken });
    expect(updated).toMatchObject({
      ok: false,
      error: { kind: 'apply', message: 'Error: cannot start' },
      status: { state: 'running', packageId: `pkg_${pluginId}`, name: 'stable', tools: ['stable'] },
    });
    expect(await agent.call('stable')).toBe('old');
    await runtime.stop(OWNER, pluginId);
  });

  it('stop removes every registration and listener; its tools answer ABORTED', async () => {
    const { pluginId } = await run(
      runtime,
      agent,
      `return (ctx) => {
        ctx.tools.register({ name: 'gone_soon', execute: () => 1 });
        ctx.on('tools/result', () => {});
      }`,
    );
    const tool = agent.tools.get('gone_soon');
    expect(agent.subscribers()).toBe(1);
    const status = await runtime.stop(OWNER, pluginId);
    expect(status).toMatchObject({ state: 'stopped', tools: [] });
    expect(agent.tools.has('gone_soon')).toBe(false);
    expect(agent.subscribers()).toBe(0);
    await expect(
      tool?.execute({}, { callId: 'c', signal: new AbortController().signal }),
    ).rejects.toMatchObject({
      code: 'ABORTED',
    });
    // Running it again works; stopping twice is harmless.
    expect(
      (
        await runtime.start({
          owner: OWNER,
          pluginId,
          packageId: 'pkg',
          source: 'return () => {}',
          capabilities: agent.capabilities,
        })
      ).ok,
    ).toBe(true);
    await runtime.stop(OWNER, pluginId);
    await runtime.stop(OWNER, pluginId);
  });

  it("delivers the agent's events to listeners, only while somebody listens", async () => {
    const { pluginId } = await run(
      runtime,
      agent,
      `return (ctx) => {
        const seen = [];
        const off = ctx.on('tools/result', (event) => seen.push(event.name));
        ctx.tools.register({ name: 'seen', execute: () => seen });
        ctx.tools.register({ name: 'unlisten', execute: () => { off(); return seen.length } });
      }`,
    );
    agent.emit('tools/result', { name: 'bash', ok: true });
    agent.emit('tools/change', { added: ['x'] });
    agent.emit('tools/result', { name: 'read', ok: false });
    await eventually(async () => expect(await agent.call('seen')).toEqual(['bash', 'read']));
    expect(await agent.call('unlisten')).toBe(2);
    await eventually(() => expect(agent.subscribers()).toBe(0));
    await runtime.stop(OWNER, pluginId);
  });

  it('gives a Cordis-shaped context: on/once/off/emit/parallel/serial/bail, effect, plugin, ready, config', async () => {
    const { ok, pluginId, status } = await run(
      runtime,
      agent,
      `class Child { constructor(ctx) { ctx.on('dispose', () => ctx.logger.info('child disposed')) } }
      return {
        name: 'shape',
        Config: (config) => ({ greeting: 'hi', ...config }),
        apply(ctx, config) {
          const out = { config };
          const order = [];
          ctx.on('x', (v) => order.push('a' + v));
          ctx.on('x', (v) => order.push('first' + v), true);
          const off = ctx.on('x', (v) => order.push('off' + v));
          ctx.once('x', (v) => order.push('once' + v));
          off();
          ctx.emit('x', 1);
          ctx.emit('x', 2);
          out.order = order;
          ctx.on('pick', () => undefined);
          ctx.on('pick', (v) => v * 2);
          out.bail = ctx.bail('pick', 21);
          const fn = (v) => order.push('removed' + v);
          ctx.on('x', fn);
          out.off = ctx.off('x', fn);
          ctx.emit('x', 3);
          try { ctx.on('boom', () => { throw new Error('listener threw') }); ctx.emit('boom') }
          catch (e) { out.emitThrow = e.message }
          ctx.on('ready', () => ctx.logger.info('ready fired'));
          const fork = ctx.plugin(Child);
          out.forkActive = fork.active;
          fork.dispose();
          out.forkAfter = fork.active;
          ctx.plugin((sub) => sub.effect(() => () => ctx.logger.info('sub effect off')));
          ctx.tools.register({ name: 'shape', async execute() {
            out.serial = await ctx.serial('pick', 5);
            let n = 0; ctx.on('p', async () => { n++ }); ctx.on('p', async () => { n++ });
            await ctx.parallel('p');
            out.parallel = n;
            return out;
          } });
        },
      }`,
    );
    expect(ok).toBe(true);
    expect(status.logs.map((l) => l.text)).toEqual(['[Child] child disposed', '[shape] ready fired']);
    expect(await agent.call('shape')).toEqual({
      config: { greeting: 'hi' },
      order: ['first1', 'a1', 'once1', 'first2', 'a2', 'first3', 'a3'],
      bail: 42,
      off: true,
      emitThrow: 'listener threw',
      forkActive: true,
      forkAfter: false,
      serial: 10,
      parallel: 2,
    });
    const stopped = await runtime.stop(OWNER, pluginId);
    expect(stopped.logs.at(-1)?.text).toBe('[shape] sub effect off');
  });

  it('fails with the reason: a body that does not parse, one that throws (with its own line), no plugin', async () => {
    const cases = [
      ['return {', 'compile', /^SyntaxError: /],
      ['const x = 1;\nnull.boom;\nreturn () => {}', 'apply', /^TypeError: Cannot read properties of null/],
      ['return 42', 'apply', /must return a plugin/],
      ['return { apply(ctx) { throw new RangeError("nope") } }', 'apply', /^RangeError: nope$/],
    ] as const;
    for (const [source, kind, message] of cases) {
      const { ok, status } = await run(runtime, agent, source);
      expect(ok).toBe(false);
      expect(status.state).toBe('failed');
      expect(status.error?.kind).toBe(kind);
      expect(status.error?.message).toMatch(message);
    }
    const { status } = await run(runtime, agent, 'const x = 1;\nnull.boom;\nreturn () => {}');
    expect(status.error?.stack).toBe('    at plugin.js:2:6');
  });

  it("refuses a registration the agent's registry refuses (a built-in name): the plugin fails as refused", async () => {
    const { ok, status } = await run(
      runtime,
      agent,
      `return (ctx) => { ctx.tools.register({ name: 'mine', execute: () => 1 }); ctx.tools.register({ name: 'bash', execute: () => 'owned' }) }`,
    );
    expect(ok).toBe(false);
    expect(status).toMatchObject({
      state: 'failed',
      tools: [],
      error: { kind: 'refused', message: 'tool bash: the agent already has a tool named bash' },
    });
    expect(agent.tools.has('mine')).toBe(false);
  });

  it("keeps plugins to their owner: another agent's id reads as absent", async () => {
    const { pluginId } = await run(runtime, agent, 'return () => {}');
    const other = { tenantId: OWNER.tenantId, agentId: 'agt_other' };
    expect(runtime.status(other, pluginId)).toBeUndefined();
    expect(runtime.list(other)).toEqual([]);
    await expect(runtime.stop(other, pluginId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(
      runtime.update(other, pluginId, { packageId: 'x', source: 'return () => {}' }),
    ).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await expect(
      runtime.start({
        owner: other,
        pluginId,
        packageId: 'x',
        source: 'return () => {}',
        capabilities: agent.capabilities,
      }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(runtime.status(OWNER, pluginId)?.state).toBe('running');
    // Running twice is a conflict; forgetting a running plugin too.
    await expect(
      runtime.start({
        owner: OWNER,
        pluginId,
        packageId: 'x',
        source: 'return () => {}',
        capabilities: agent.capabilities,
      }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(() => runtime.forget(OWNER, pluginId)).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
    await runtime.stop(OWNER, pluginId);
    expect(runtime.forget(OWNER, pluginId)).toBe(true);
    expect(runtime.status(OWNER, pluginId)).toBeUndefined();
  });
});

describe('plugin runtime when a worker process dies', () => {
  it('starts its plugins again from their packages; one running something at two deaths fails as crash', async () => {
    const runtime = startRuntime({ ...TEST_LIMITS, callWallMs: 10_000 });
    try {
      const agent = fakeAgent();
      const idle = await run(
        runtime,
        agent,
        `let n = 0; return (ctx) => { ctx.tools.register({ name: 'idle', execute: () => ++n }) }`,
      );
      const busy = await run(
        runtime,
        agent,
        `return (ctx) => { ctx.tools.register({ name: 'busy', async execute(args, exec) { await exec.call('wait', {}) } }) }`,
      );
      expect(await agent.call('idle')).toBe(1);
      expect(await agent.call('idle')).toBe(2);
      /** Kills the worker while `busy` waits on an inner call; its call ends ABORTED. */
      const killWhileBusy = async () => {
        const [pid] = runtime.pids();
        const waits = agent.calls.filter((c) => c.name === 'wait').length;
        const pending = agent.call('busy');
        await eventually(() => expect(agent.calls.filter((c) => c.name === 'wait').length).toBe(waits + 1));
        process.kill(pid ?? 0, 'SIGKILL');
        await expect(pending).rejects.toMatchObject({ code: 'ABORTED' });
        return pid;
      };
      const pid = await killWhileBusy();
      // Both start again: a death while a call was in flight may be another plugin's doing.
      await eventually(() =>
        expect(runtime.status(OWNER, idle.pluginId)).toMatchObject({ state: 'running', restarts: 1 }),
      );
      await eventually(() =>
        expect(runtime.status(OWNER, busy.pluginId)).toMatchObject({ state: 'running', restarts: 1 }),
      );
      // The idle plugin starts over: a fresh isolate from the same package.
      expect(await agent.call('idle')).toBe(1);
      expect(runtime.pids()).not.toContain(pid);
      // A second death while it runs something is its own: it fails, its tool is gone.
      await killWhileBusy();
      await eventually(() =>
        expect(runtime.status(OWNER, busy.pluginId)).toMatchObject({
          state: 'failed',
          tools: [],
          error: { kind: 'crash', message: 'the plugin process died while this plugin ran' },
        }),
      );
      expect(agent.tools.has('busy')).toBe(false);
      await eventually(() =>
        expect(runtime.status(OWNER, idle.pluginId)).toMatchObject({ state: 'running', restarts: 2 }),
      );
    } finally {
      await runtime.close();
    }
  });
});

describe('plugin runtime start-up', () => {
  it('runs the seed example package', async () => {
    const runtime = startRuntime();
    try {
      const agent = fakeAgent();
      const { status } = await run(
        runtime,
        agent,
        "return { name: 'hello', apply(ctx) { ctx.logger.info('hello') } }",
      );
      expect(status).toMatchObject({
        state: 'running',
        name: 'hello',
        logs: [{ level: 'info', text: '[hello] hello' }],
      });
      // console writes to the plugin's log as well (the isolate's own console prints nowhere).
      const logged = await run(
        runtime,
        agent,
        "console.warn('from', { the: 'body' }); return () => console.log(1)",
      );
      expect(logged.status.logs).toEqual([
        expect.objectContaining({ level: 'warn', text: 'from {"the":"body"}' }),
        expect.objectContaining({ level: 'info', text: '1' }),
      ]);
    } finally {
      await runtime.close();
    }
  });
});
