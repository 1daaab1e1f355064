// Each tenant's creator plugins run on plugin worker processes of its own. Guarantee: a tenant's
// plugin that takes its worker down (an allocation isolated-vm cannot stop, the process past its
// cap) or is ended for it fails alone; another tenant's plugin, even one with a call in flight,
// never notices (same process, no restart, the call still in flight), and the API answers
// throughout. Over HTTP, with the real isolate host and real plugin workers.
import { afterAll, describe, expect, it } from 'vitest';
import { createPluginProcesses } from '../../../host/plugins/processes.ts';
import { pluginService } from './plugin-service.ts';

const VICTIM = `return { name: 'victim', apply(ctx) {
  ctx.tools.register({ name: 'hang', description: 'never answers', parameters: { type: 'object' }, execute: () => new Promise(() => {}) });
  ctx.tools.register({ name: 'ping', description: 'pong', parameters: { type: 'object' }, execute: () => 'pong' });
} }`;
const BOMB = `return { name: 'bomb', apply(ctx) {
  ctx.tools.register({ name: 'boom', description: 'x', parameters: { type: 'object' }, execute: () => { new Array(2 ** 31).fill(0) } });
} }`;

const processes = createPluginProcesses({ rssMb: 512 });
const { keyA, keyB, tenantB, request, call, creator, run, close } = await pluginService({
  processes,
  limits: { callWallMs: 30_000 },
});
afterAll(async () => {
  await close();
  await processes.close();
});

const start = async (key: string, host: string) => {
  const agentId = await creator(key);
  const { pluginId, run: result } = await run(key, agentId, host);
  expect(result.ok).toBe(true);
  return { agentId, pluginId };
};

describe("a plugin worker brought down by another tenant's plugin", () => {
  it('the bomb fails; the neighbour with a call in flight never notices; the API answers', async () => {
    const victim = await start(keyB, VICTIM);
    let settled = false;
    const hanging = call(keyB, victim.agentId, 'hang').finally(() => {
      settled = true;
    });
    const pidsB = processes.pids(tenantB);
    const bomb = await start(keyA, BOMB);
    expect((await call(keyA, bomb.agentId, 'boom')).ok).toBe(false);
    expect((await request(keyB, 'GET', '/v1/health')).status).toBe(200);
    const bombSelf = (await call(keyA, bomb.agentId, 'cordis_inspect_self', { pluginId: bomb.pluginId }))
      .value;
    expect(bombSelf.state).toBe('failed');
    // The neighbour runs on, on the same process, and its call is still in flight.
    expect(settled).toBe(false);
    expect((await call(keyB, victim.agentId, 'ping')).value).toBe('pong');
    const self = (await call(keyB, victim.agentId, 'cordis_inspect_self', { pluginId: victim.pluginId }))
      .value;
    expect(self).toMatchObject({ state: 'running', restarts: 0 });
    expect(processes.pids(tenantB)).toEqual(pidsB);
    expect((await call(keyB, victim.agentId, 'cordis_stop', { pluginId: victim.pluginId })).ok).toBe(true);
    expect((await hanging).error.code).toBe('ABORTED');
  }, 60_000);
});
