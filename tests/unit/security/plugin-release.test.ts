// Creator plugins hold isolates on shared worker processes. Guarantee: whatever order a tenant's
// calls come in — the agent deleted while a plugin tool runs or while a plugin is still starting,
// updates, stops and runs of one plugin racing each other — every isolate a plugin held is given
// back (the workers' reservations return to what the running plugins hold), the store and the
// runtime agree, and another tenant is served throughout. Over HTTP, real plugin workers.
import { afterAll, describe, expect, it } from 'vitest';
import { createPluginProcesses, type PluginProcesses } from '../../../host/plugins/processes.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../api/harness.ts';
import { pluginService } from './plugin-service.ts';

/** The real worker processes, counting the isolates placed on them and not yet released. */
const counted = (inner: PluginProcesses) => {
  let held = 0;
  const processes: PluginProcesses = {
    ...inner,
    async place(request) {
      const placement = await inner.place(request);
      held++;
      return placement;
    },
    release(placement) {
      held--;
      inner.release(placement);
    },
  };
  return { processes, held: () => held };
};

const workers = counted(createPluginProcesses());
const { store, keyA, request, call, creator, define, bServed, close } = await pluginService({
  processes: workers.processes,
  limits: { callWallMs: 20_000 },
});
afterAll(async () => {
  await close();
  await workers.processes.close();
});

const HANGS = `return { name: 'h', apply(ctx) { ctx.tools.register({ name: 'hang', description: 'x', parameters: { type: 'object' }, execute: () => new Promise(() => {}) }) } }`;
const SLOW_START = `return { name: 's', async apply(ctx) { await new Promise(() => {}) } }`;
const version = (n: number) =>
  `return { name: 'v', apply(ctx) { ctx.tools.register({ name: 'which', description: 'x', parameters: { type: 'object' }, execute: () => ${n} }) } }`;

describe('plugin isolates are given back', () => {
  it('when the agent is deleted while a plugin tool runs, or while a plugin starts', async () => {
    const agentId = await creator(keyA);
    const hangs = await define(keyA, agentId, HANGS);
    expect((await call(keyA, agentId, 'cordis_run', { ...hangs, mode: 'run' })).ok).toBe(true);
    const slow = await define(keyA, agentId, SLOW_START);
    const hanging = call(keyA, agentId, 'hang');
    const starting = call(keyA, agentId, 'cordis_run', { ...slow, mode: 'run' });
    await until(() => workers.held() === 2, { what: 'both isolates placed' });
    expect((await request(keyA, 'DELETE', `/v1/agents/${agentId}`)).status).toBe(204);
    await Promise.all([hanging, starting]);
    await until(() => workers.held() === 0, { what: 'every isolate released' });
    expect(await store.plugins.listRunning()).toEqual([]);
    await bServed();
  });

  it('when runs, updates and stops of one plugin race', async () => {
    const agentId = await creator(keyA);
    const first = await define(keyA, agentId, version(0));
    const { pluginId } = first;
    const packages = [first.packageId];
    for (let i = 1; i < 4; i++) packages.push((await define(keyA, agentId, version(i), pluginId)).packageId);
    expect(
      (await call(keyA, agentId, 'cordis_run', { pluginId, packageId: packages[0], mode: 'run' })).ok,
    ).toBe(true);
    const racing = [
      ...packages.map((packageId) =>
        call(keyA, agentId, 'cordis_run', { pluginId, packageId, mode: 'update' }),
      ),
      call(keyA, agentId, 'cordis_stop', { pluginId }),
      call(keyA, agentId, 'cordis_run', { pluginId, packageId: packages[2], mode: 'run' }),
      call(keyA, agentId, 'cordis_undefine', { pluginId }),
      ...packages.map((packageId) =>
        call(keyA, agentId, 'cordis_run', { pluginId, packageId, mode: 'update' }),
      ),
      call(keyA, agentId, 'cordis_stop', { pluginId }),
    ];
    for (const result of await Promise.all(racing))
      if (!result.ok) expect(['CONFLICT', 'NOT_FOUND']).toContain(result.error.code);
    const plugin = (await request(keyA, 'GET', `/v1/agents/${agentId}/plugins/${pluginId}`)).json;
    const running = plugin?.state === 'running';
    expect(workers.held()).toBe(running ? 1 : 0);
    const tools = (await request(keyA, 'GET', `/v1/agents/${agentId}/tools`)).json.tools.map(
      (t: Loose) => t.name,
    );
    expect(tools.includes('which')).toBe(running);
    expect((await store.plugins.listRunning()).some((p) => p.id === pluginId)).toBe(running);
    expect((await request(keyA, 'DELETE', `/v1/agents/${agentId}`)).status).toBe(204);
    await until(() => workers.held() === 0, { what: 'every isolate released' });
    await bServed();
  });
});
