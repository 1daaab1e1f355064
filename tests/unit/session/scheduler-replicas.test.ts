// With replicas, only the replica that runs an agent's family fires its schedules (mayFire): one
// that may not fire a due schedule leaves it due and looks again a few seconds later, so it fires
// it once the family is its own (its owner died and it took the family over), exactly once; and it
// looks at the store every few seconds anyway, since schedules made on another replica are not
// announced to it.
import { afterEach, expect, it, vi } from 'vitest';
import { createScheduler } from '../../../host/schedules/scheduler.ts';
import { openStore, type Store } from '../../../host/store/index.ts';

let store: Store | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await store?.close();
  store = undefined;
});

it('fires a due schedule only once this replica may, exactly once, and finds schedules made elsewhere', async () => {
  store = openStore({ path: ':memory:' });
  const tenant = await store.tenants.createTenant('t');
  const agent = await store.agents.create({
    tenantId: tenant.id,
    preset: 'default',
    mode: 'native',
    config: {},
  });
  const start = Date.now();
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: start });
  let mine = false;
  const asked: string[] = [];
  const scheduler = createScheduler({
    schedules: store.schedules!,
    events: store.events,
    requests: store.requests,
    agents: store.agents,
    mayFire: async (record) => {
      asked.push(record.id);
      return mine;
    },
  });
  const fired = async () => (await store!.events.list(agent.id)).filter((e) => e.type === 'schedule.fired');
  try {
    scheduler.start();
    await vi.advanceTimersByTimeAsync(100);
    // Made on another replica after this one armed: nothing tells this one.
    await store.schedules!.create(
      {
        tenantId: tenant.id,
        agentId: agent.id,
        prompt: 'p',
        kind: 'after',
        spec: { after_seconds: 1 },
        nextAt: start + 1000,
      },
      10,
    );
    await vi.advanceTimersByTimeAsync(12_000);
    expect(asked.length).toBeGreaterThanOrEqual(1); // found, and asked about
    expect(await fired()).toHaveLength(0); // another replica's to fire
    mine = true; // the family is this replica's now
    await vi.advanceTimersByTimeAsync(12_000);
    expect(await fired()).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(12_000);
    expect(await fired()).toHaveLength(1);
  } finally {
    scheduler.close();
  }
});
