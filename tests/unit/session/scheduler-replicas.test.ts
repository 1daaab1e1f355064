// With replicas, only the replica that runs an agent's family fires its schedules (mayFire): one
// that may not fire a due schedule leaves it due and looks again a few seconds later, so it fires
// it once the family is its own (its owner died and it took the family over), exactly once; and it
// looks at the store every few seconds anyway, since schedules made on another replica are not
// announced to it.
import { afterEach, expect, it, vi } from 'vitest';
import { createScheduler } from '../../../host/schedules/scheduler.ts';
import { openStore, type ScheduleRecord, type Store } from '../../../host/store/index.ts';

let store: Store | undefined;
const replicaScheduler = (s: Store, mayFire: (record: ScheduleRecord) => Promise<boolean>) =>
  createScheduler({
    schedules: s.schedules!,
    events: s.events,
    requests: s.requests,
    agents: s.agents,
    mayFire,
  });
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
  const scheduler = replicaScheduler(store, async (record) => {
    asked.push(record.id);
    return mine;
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

it("fires this replica's due schedule at once when more than a read's worth of others' are due before it", async () => {
  store = openStore({ path: ':memory:' });
  const tenant = await store.tenants.createTenant('t');
  const agentOf = () =>
    store!.agents.create({ tenantId: tenant.id, preset: 'default', mode: 'native', config: {} });
  const theirs = await agentOf();
  const ours = await agentOf();
  const start = Date.now();
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: start });
  const schedule = (agentId: string, nextAt: number) =>
    store!.schedules!.create(
      { tenantId: tenant.id, agentId, prompt: 'p', kind: 'after', spec: { after_seconds: 1 }, nextAt },
      1000,
      1000,
    );
  // 250 of another replica's agent (its owner is gone: its lease has not run out yet), all due
  // before this replica's one, in the same tenant (so they come first in the store's turns).
  for (let i = 0; i < 250; i++) await schedule(theirs.id, start - 60_000 + i);
  await schedule(ours.id, start - 1000);
  const asked = new Map<string, number>();
  const scheduler = replicaScheduler(store, async (record) => {
    asked.set(record.id, (asked.get(record.id) ?? 0) + 1);
    return record.agentId === ours.id;
  });
  const fired = async (agentId: string) =>
    (await store!.events.list(agentId)).filter((e) => e.type === 'schedule.fired');
  try {
    scheduler.start();
    await vi.advanceTimersByTimeAsync(100);
    expect(await fired(ours.id)).toHaveLength(1); // not after the others' owner's lease
    expect(await fired(theirs.id)).toHaveLength(0);
    // Others' are asked about again every few seconds, not in a loop.
    await vi.advanceTimersByTimeAsync(12_000);
    expect(Math.max(...asked.values())).toBeLessThanOrEqual(4);
    expect(asked.size).toBe(251);
  } finally {
    scheduler.close();
  }
});
