// A recurring schedule whose reminder the client has not answered yet (round 5 of the adversarial
// pass): each fire made one more pending reminder, kept a day with an expiry timer in the API
// process, so one agent's 32 schedules of a minute left 46,000 pending requests a day (and a
// tenant's agents together 1.5 million), whether or not a client ever read them. A fire while the
// schedule's last reminder is pending makes none: the schedule advances, its `schedule.fired`
// event names the pending reminder, and the client still has the one to answer.
import { afterEach, expect, it, vi } from 'vitest';
import { createScheduler } from '../../../host/schedules/scheduler.ts';
import { openStore, type Store } from '../../../host/store/index.ts';

let store: Store | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await store?.close();
  store = undefined;
});

it('keeps one pending reminder per schedule while the client has not answered it', async () => {
  store = openStore({ path: ':memory:' });
  const tenant = await store.tenants.createTenant('t');
  const start = Date.now();
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'], now: start });
  const agentId = 'agt_sched_unanswered';
  store.agents.get = async () => ({ id: agentId, tenantId: tenant.id }) as never;
  await store.schedules?.create(
    {
      tenantId: tenant.id,
      agentId,
      prompt: 'p',
      kind: 'every',
      spec: { every_seconds: 60 },
      everyMs: 60_000,
      nextAt: start + 60_000,
    },
    32,
  );
  const scheduler = createScheduler({
    schedules: store.schedules as never,
    events: store.events,
    requests: store.requests,
    agents: store.agents,
  });
  try {
    scheduler.start();
    await vi.advanceTimersByTimeAsync(10 * 60_000 + 1000);
    const pending = await store.requests.list(agentId, 'pending');
    expect(pending.map((r) => r.kind)).toEqual(['reminder']);
    // It fired every period all the same.
    const [schedule] = (await store.schedules?.list(tenant.id, agentId)) ?? [];
    expect(schedule?.fired).toBe(10);
    // Answered, the next fire makes a new one.
    await store.requests.answer(pending[0]?.id ?? '', { result: 'done' });
    await vi.advanceTimersByTimeAsync(60_000);
    expect((await store.requests.list(agentId, 'pending')).length).toBe(1);
  } finally {
    scheduler.close();
  }
});
