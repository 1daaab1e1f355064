// Creator plugins of all tenants share the plugin worker processes. Guarantee: a tenant's plugin
// that takes its worker down (an allocation isolated-vm cannot stop, the process past its cap)
// fails alone; another tenant's plugin that merely had a call in flight on that worker loses that
// call but is started again and serves the next one, and the API answers throughout. Over HTTP,
// with the real isolate host and a real plugin worker.
import { afterAll, describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import { createApp } from '../../../host/api/app.ts';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../api/harness.ts';

const VICTIM = `return { name: 'victim', apply(ctx) {
  ctx.tools.register({ name: 'hang', description: 'never answers', parameters: { type: 'object' }, execute: () => new Promise(() => {}) });
  ctx.tools.register({ name: 'ping', description: 'pong', parameters: { type: 'object' }, execute: () => 'pong' });
} }`;
const BOMB = `return { name: 'bomb', apply(ctx) {
  ctx.tools.register({ name: 'boom', description: 'x', parameters: { type: 'object' }, execute: () => { new Array(2 ** 31).fill(0) } });
} }`;

const isolates = createIsolateHost({ workers: 1, prewarm: 1 });
const store = openStore({ path: ':memory:' });
const { agents } = assembleAgents({
  store,
  sandboxes: createMemoryProvider(),
  isolates,
  plugins: {
    processOptions: { workers: 1 },
    limitsOf: () => ({ cpuMsPerCallback: 300, callWallMs: 30_000 }),
  },
});
const app = createApp({ startedAt: Date.now(), version: 'test', store, agents });
const keyA = store.tenants.createTenant('a').apiKey;
const keyB = store.tenants.createTenant('b').apiKey;
afterAll(async () => {
  await agents.close(0);
  await isolates.close();
  store.close();
});

const request = async (key: string, method: string, url: string, body?: unknown): Promise<Loose> => {
  const res = await app.request(url, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: await res.json().catch(() => undefined) };
};
let seq = 0;
const call = async (key: string, agentId: string, name: string, args: unknown = {}): Promise<Loose> =>
  (
    await request(key, 'POST', `/v1/agents/${agentId}/calls`, {
      calls: [{ id: `c${++seq}`, name, arguments: args }],
    })
  ).json.results[0];
const start = async (key: string, host: string) => {
  const agentId = (await request(key, 'POST', '/v1/agents', { preset: 'creator' })).json.id as string;
  const defined = await call(key, agentId, 'cordis_define', {
    plugin: { kind: 'new', idPrefix: 'p' },
    name: 'p',
    purpose: '',
    code: { host },
  });
  const { pluginId, packageId } = defined.value;
  expect((await call(key, agentId, 'cordis_run', { pluginId, packageId, mode: 'run' })).ok).toBe(true);
  return { agentId, pluginId: pluginId as string };
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
