// A due schedule whose fire keeps failing (its agent cannot be read, the fire's transaction is
// refused) while the store still answers nextDue() must not make the scheduler fire it again at once,
// forever: every retry is a store round trip, and on PostgreSQL a tight loop of them holds a
// connection and a core. The failed fire is tried again after a pause, as a failed read is.
import { afterEach, expect, it, vi } from 'vitest';
import { createScheduler } from '../../../host/schedules/scheduler.ts';
import { openStore, type Store } from '../../../host/store/index.ts';

let store: Store | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await store?.close();
  store = undefined;
});

it('pauses before firing again a schedule whose fire failed', async () => {
  store = openStore({ path: ':memory:' });
  const start = Date.now();
  await store.schedules!.create(
    {
      tenantId: 't',
      agentId: 'agt_x',
      prompt: 'p',
      kind: 'after',
      spec: { after_seconds: 1 },
      nextAt: start - 1,
    },
    10,
  );
  let reads = 0;
  store.agents.get = async () => {
    reads++;
    throw new Error('the agent store is failing');
  };
  const errors: unknown[] = [];
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'], now: start });
  const scheduler = createScheduler({
    schedules: store.schedules!,
    events: store.events,
    requests: store.requests,
    agents: store.agents,
    onError: (error) => errors.push(error),
  });
  try {
    scheduler.start();
    await vi.advanceTimersByTimeAsync(10_000);
    // Fired at start, then at most once per pause: not once per turn of the event loop.
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThanOrEqual(4);
    expect(errors).toHaveLength(reads);
  } finally {
    scheduler.close();
  }
});
