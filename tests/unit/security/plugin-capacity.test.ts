// Plugin worker processes are shared fairly across tenants: an idle tenant must not hold a worker
// another needs. Every worker holds one tenant's plugins, and the host runs at most `maxWorkers`:
// with as many tenants as that, each with one idle plugin, a further tenant's first plugin was
// refused ISOLATE_UNAVAILABLE until a worker was reaped, which never happened while the idle
// plugins ran (a denial of service across tenants where accounts are cheap). Guarantee: the
// newcomer takes the least recently used worker of the tenant holding the most, among those whose
// plugins have no callback in flight and were used nothing for `reclaimAfterMs` (by default
// DSH_PLUGIN_IDLE_MS; 0 in most tests here); the plugins on it fail with ISOLATE_UNAVAILABLE saying so
// (their tools withdrawn, never a hang) and start again on their next cordis_run. A worker with a
// callback in flight is never taken: with every worker busy the newcomer is refused as before.
// Real worker processes, real isolates.
import { afterAll, describe, expect, it } from 'vitest';
import type { PluginProcessEvent } from '../../../host/plugins/processes.ts';
import { createPluginRuntime } from '../../../host/plugins/runtime.ts';
import { eventually, fakeAgent, run, TEST_LIMITS } from '../plugins/helpers.ts';
import { pluginService } from './plugin-service.ts';

const PLUGIN = `return { name: 'tenant', apply(ctx) {
  ctx.tools.register({ name: 'ping', description: 'pong', parameters: { type: 'object' }, execute: () => 'pong' });
  ctx.tools.register({ name: 'hold', description: 'waits for the agent', parameters: { type: 'object' },
    execute: (_args, exec) => exec.call('wait', {}) });
} }`;

const owner = (tenant: string) => ({ tenantId: tenant, agentId: `agt_${tenant}` });

describe('plugin workers shared across tenants', () => {
  const events: PluginProcessEvent[] = [];
  // Two workers, two tenants holding them: the smallest host that shows it (a quarter of 8 is the
  // reserve for tenants with none; first workers may take it, as here).
  const runtime = createPluginRuntime({
    limitsOf: () => ({ ...TEST_LIMITS, callWallMs: 60_000 }),
    processOptions: {
      maxWorkers: 2,
      idleMs: 60_000,
      reclaimAfterMs: 0,
      onEvent: (event) => events.push(event),
    },
  });
  afterAll(() => runtime.close());
  const a = fakeAgent();
  const b = fakeAgent();
  const c = fakeAgent();

  it("a newcomer takes an idle tenant's worker, never a busy one", async () => {
    const pa = await run(runtime, a, PLUGIN, 'pa', owner('ten_a'));
    const pb = await run(runtime, b, PLUGIN, 'pb', owner('ten_b'));
    expect([pa.ok, pb.ok]).toEqual([true, true]);

    // Every worker has a callback in flight: the newcomer is refused, nobody's plugin is touched.
    const holds = [a.call('hold'), b.call('hold')];
    await eventually(() => expect([a.calls.length, b.calls.length]).toEqual([1, 1]));
    const refused = await run(runtime, c, PLUGIN, 'pc', owner('ten_c'));
    expect(refused).toMatchObject({ ok: false, error: { code: 'ISOLATE_UNAVAILABLE' } });
    a.release('done');
    b.release('done');
    expect(await Promise.all(holds)).toEqual(['done', 'done']);
    expect(runtime.status(owner('ten_a'), 'pa')).toMatchObject({ state: 'running' });

    // All idle now; B used its worker last, so A's is the one taken.
    expect(await b.call('ping')).toBe('pong');
    const placed = await run(runtime, c, PLUGIN, 'pc', owner('ten_c'));
    expect(placed).toMatchObject({ ok: true, status: { state: 'running' } });
    expect(await c.call('ping')).toBe('pong');
    expect(events).toContainEqual(expect.objectContaining({ type: 'reclaimed', tenantId: 'ten_a' }));

    // A's plugin failed with a clear error, its tools withdrawn; B's runs on.
    expect(runtime.status(owner('ten_a'), 'pa')).toMatchObject({
      state: 'failed',
      tools: [],
      error: {
        kind: 'unavailable',
        code: 'ISOLATE_UNAVAILABLE',
        message: expect.stringContaining('given to another tenant'),
      },
    });
    await expect(a.call('ping')).rejects.toThrow('no plugin tool ping');
    expect(await b.call('ping')).toBe('pong');

    // A runs it again: it takes the least recently used idle worker in turn (C's: B answered last).
    const again = await run(runtime, a, PLUGIN, 'pa', owner('ten_a'));
    expect(again).toMatchObject({ ok: true, status: { state: 'running' } });
    expect(await a.call('ping')).toBe('pong');
    expect(runtime.status(owner('ten_c'), 'pc')).toMatchObject({
      state: 'failed',
      error: { code: 'ISOLATE_UNAVAILABLE' },
    });
    expect(await b.call('ping')).toBe('pong');
    expect(events.filter((e) => e.type === 'reclaimed').map((e) => e.tenantId)).toEqual(['ten_a', 'ten_c']);
    // A reclaimed worker's exit is no reap and no crash.
    expect(events.filter((e) => e.type === 'exited' || e.type === 'reaped')).toEqual([]);
  }, 60_000);
});

describe('a reclaimed plugin, as its agent sees it over HTTP', () => {
  const service = pluginService({ processOptions: { maxWorkers: 2, idleMs: 60_000, reclaimAfterMs: 0 } });
  afterAll(async () => (await service).close());

  it('fails ISOLATE_UNAVAILABLE with its tools gone, and cordis_run starts it again', async () => {
    const { keyA, keyB, store, call, creator, run: runOn } = await service;
    const keyC = (await store.tenants.createTenant('c')).apiKey;
    const [agentA, agentB, agentC] = [await creator(keyA), await creator(keyB), await creator(keyC)];
    const a = await runOn(keyA, agentA, PLUGIN);
    expect(a.run.ok).toBe(true);
    expect((await runOn(keyB, agentB, PLUGIN)).run.ok).toBe(true);
    expect((await call(keyB, agentB, 'ping')).value).toBe('pong');

    // Both workers held by idle plugins; C's first plugin takes A's (the least recently used).
    expect((await runOn(keyC, agentC, PLUGIN)).run).toMatchObject({ ok: true });
    expect((await call(keyC, agentC, 'ping')).value).toBe('pong');
    const self = (await call(keyA, agentA, 'cordis_inspect_self', { pluginId: a.pluginId })).value;
    expect(self).toMatchObject({
      state: 'failed',
      error: { code: 'ISOLATE_UNAVAILABLE', message: expect.stringContaining('given to another tenant') },
    });
    expect((await call(keyA, agentA, 'ping')).ok).toBe(false);
    expect((await call(keyB, agentB, 'ping')).value).toBe('pong');

    // cordis_run starts it again (taking C's worker, the least recently used now).
    const again = await call(keyA, agentA, 'cordis_run', {
      pluginId: a.pluginId,
      packageId: a.packageId,
      mode: 'run',
    });
    expect(again).toMatchObject({ ok: true });
    expect((await call(keyA, agentA, 'ping')).value).toBe('pong');
  }, 60_000);
});

describe("a worker whose plugin's event listener waits on a tool", () => {
  const runtime = createPluginRuntime({
    limitsOf: () => TEST_LIMITS,
    processOptions: { maxWorkers: 2, idleMs: 60_000, reclaimAfterMs: 0 },
  });
  afterAll(() => runtime.close());
  // An event handler's own call (no call into the plugin around it) is a callback in flight too.
  const LISTENER = `return (ctx) => { ctx.on('tools/result', () => ctx.tools.call('wait', {})) }`;

  it('is never taken; once the call is answered and a callback has passed, it is', async () => {
    const [a, b, c] = [fakeAgent(), fakeAgent(), fakeAgent()];
    expect((await run(runtime, a, LISTENER, 'la', owner('ten_a'))).ok).toBe(true);
    expect((await run(runtime, b, LISTENER, 'lb', owner('ten_b'))).ok).toBe(true);
    a.emit('tools/result', { name: 'read', ok: true });
    b.emit('tools/result', { name: 'read', ok: true });
    await eventually(() => expect([a.calls.length, b.calls.length]).toEqual([1, 1]));
    const refused = await run(runtime, c, LISTENER, 'lc', owner('ten_c'));
    expect(refused).toMatchObject({ ok: false, error: { code: 'ISOLATE_UNAVAILABLE' } });
    expect(runtime.status(owner('ten_a'), 'la')).toMatchObject({ state: 'running' });
    expect(runtime.status(owner('ten_b'), 'lb')).toMatchObject({ state: 'running' });

    // Answered: the handler may still run for two callbacks' CPU, then the worker is idle.
    a.release();
    b.release();
    await eventually(async () => {
      expect(await run(runtime, c, LISTENER, 'lc', owner('ten_c'))).toMatchObject({ ok: true });
    });
    const states = ['la', 'lb'].map((id, i) => runtime.status(owner(i === 0 ? 'ten_a' : 'ten_b'), id)?.state);
    expect(states.sort()).toEqual(['failed', 'running']);
  }, 60_000);
});

describe('workers their tenants used lately', () => {
  const runtime = createPluginRuntime({
    limitsOf: () => TEST_LIMITS,
    processOptions: { maxWorkers: 2, idleMs: 60_000 },
  });
  afterAll(() => runtime.close());

  it('are not taken (by default, until unused as long as an empty worker lives)', async () => {
    // Else tenants that all use their plugins would take each other's workers in turn.
    const [a, b, c] = [fakeAgent(), fakeAgent(), fakeAgent()];
    expect((await run(runtime, a, PLUGIN, 'ua', owner('ten_a'))).ok).toBe(true);
    expect((await run(runtime, b, PLUGIN, 'ub', owner('ten_b'))).ok).toBe(true);
    expect(await a.call('ping')).toBe('pong');
    const refused = await run(runtime, c, PLUGIN, 'uc', owner('ten_c'));
    expect(refused).toMatchObject({ ok: false, error: { code: 'ISOLATE_UNAVAILABLE' } });
    expect(runtime.status(owner('ten_a'), 'ua')).toMatchObject({ state: 'running' });
    expect(runtime.status(owner('ten_b'), 'ub')).toMatchObject({ state: 'running' });
  }, 60_000);
});
