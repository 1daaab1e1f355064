// Creator plugins of all tenants share the plugin worker processes. Guarantee: a tenant's plugin
// that takes its worker down (an allocation isolated-vm cannot stop, the process past its cap)
// fails alone; another tenant's plugin that merely had a call in flight on that worker loses that
// call but is started again and serves the next one, and the API answers throughout. Over HTTP,
// with the real isolate host and a real plugin worker.
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { pluginService } from './plugin-service.ts';

const VICTIM = `return { name: 'victim', apply(ctx) {
  ctx.tools.register({ name: 'hang', description: 'never answers', parameters: { type: 'object' }, execute: () => new Promise(() => {}) });
  ctx.tools.register({ name: 'ping', description: 'pong', parameters: { type: 'object' }, execute: () => 'pong' });
} }`;
const BOMB = `return { name: 'bomb', apply(ctx) {
  ctx.tools.register({ name: 'boom', description: 'x', parameters: { type: 'object' }, execute: () => { new Array(2 ** 31).fill(0) } });
} }`;

const { keyA, keyB, request, call, creator, run, close } = pluginService({ limits: { callWallMs: 30_000 } });
afterAll(close);

const start = async (key: string, host: string) => {
  const agentId = await creator(key);
  const { pluginId, run: result } = await run(key, agentId, host);
  expect(result.ok).toBe(true);
  return { agentId, pluginId };
};

describe("a plugin worker brought down by another tenant's plugin", () => {
  it('the bomb fails; the neighbour with a call in flight runs again; the API answers', async () => {
    const victim = await start(keyB, VICTIM);
    const hanging = call(keyB, victim.agentId, 'hang');
    const bomb = await start(keyA, BOMB);
    expect((await call(keyA, bomb.agentId, 'boom')).ok).toBe(false);
    expect((await request(keyB, 'GET', '/v1/health')).status).toBe(200);
    // The neighbour's call in flight may be lost with the process; the neighbour is not.
    await hanging;
    await until(async () => (await call(keyB, victim.agentId, 'ping')).value === 'pong', {
      what: "the neighbour's plugin serving again",
      timeoutMs: 30_000,
    });
    const self = (await call(keyB, victim.agentId, 'cordis_inspect_self', { pluginId: victim.pluginId }))
      .value;
    expect(self.state).toBe('running');
    const bombSelf = (await call(keyA, bomb.agentId, 'cordis_inspect_self', { pluginId: bomb.pluginId }))
      .value;
    expect(bombSelf.state).toBe('failed');
  }, 60_000);
});
