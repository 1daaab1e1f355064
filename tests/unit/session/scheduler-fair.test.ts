// Due schedules fire fairly across tenants: one tenant's burst of schedules due at one time (more
// than one wake-up fires) does not hold back another tenant's single schedule due then. Before,
// the scheduler fired soonest first across tenants, 100 a wake-up, so tenant B's schedule waited
// behind every one of tenant A's that was due a millisecond earlier.
import { afterEach, expect, it } from 'vitest';
import { createScheduler } from '../../../host/schedules/scheduler.ts';
import { openStore, type ScheduleStore, type Store } from '../../../host/store/index.ts';

let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

const schedule = (tenantId: string, agentId: string, nextAt: number) => ({
  tenantId,
  agentId,
  prompt: 'p',
  kind: 'after' as const,
  spec: { after_seconds: 1 },
  nextAt,
});

it("fires another tenant's schedule in the first wake-up, not behind a burst of one tenant's", async () => {
  store = openStore({ path: ':memory:' });
  const schedules = store.schedules as ScheduleStore;
  store.agents.get = async (tenantId, id) => ({ id, tenantId }) as never;
  const due = Date.now() - 1000;
  // Tenant A: 250 schedules (two and a half wake-ups' worth), all due before tenant B's one.
  for (let i = 0; i < 250; i++) await schedules.create(schedule('tn_a', `agt_a${i % 10}`, due - 250 + i), 32);
  await schedules.create(schedule('tn_b', 'agt_b', due), 32);
  const order: string[] = [];
  let allFired: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    allFired = resolve;
  });
  const scheduler = createScheduler({
    schedules: {
      ...schedules,
      fire: async (...args) => {
        const fired = await schedules.fire(...args);
        order.push(args[0].id);
        if (order.length === 251) allFired();
        return fired;
      },
    },
    events: store.events,
    requests: store.requests,
    agents: store.agents,
  });
  const [b] = await schedules.list('tn_b', 'agt_b');
  try {
    scheduler.start();
    await done;
    // The first wake-up fires 100; B's is in it, right after A's soonest.
    expect(order.indexOf(b?.id ?? '')).toBeLessThan(100);
    expect(order.indexOf(b?.id ?? '')).toBe(1);
    expect(new Set(order).size).toBe(251);
  } finally {
    scheduler.close();
  }
});
