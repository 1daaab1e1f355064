// The schedules repository: owners only reach their own, the count limit, and a fire that counts
// only for the due time its firer read, so processes sharing the database fire a schedule once.
import { afterEach, expect, it } from 'vitest';
import { createScheduleStore } from '../../../host/store/schedules.ts';
import { tempDatabase } from './harness.ts';

let temp: ReturnType<typeof tempDatabase> | undefined;
afterEach(() => temp?.cleanup());

const input = (agentId: string, nextAt: number) => ({
  tenantId: 'tn_a',
  agentId,
  prompt: 'p',
  kind: 'every' as const,
  spec: { every_seconds: 60 },
  everyMs: 60_000,
  nextAt,
});

it('a due time fires once, whoever read it; a stale reader fires nothing', () => {
  temp = tempDatabase();
  const store = createScheduleStore(temp.connect());
  const { id } = store.create(input('agt_1', 1000), 10);
  // Two processes read the schedule due at 1000; the first fires it.
  let made = 0;
  expect(store.fire({ id, dueAt: 1000 }, 1000, 61_000, () => made++)).toBe(true);
  expect(store.fire({ id, dueAt: 1000 }, 1001, 61_001, () => made++)).toBe(false);
  expect(made).toBe(1);
  expect(store.list('tn_a', 'agt_1')).toEqual([expect.objectContaining({ nextAt: 61_000, fired: 1 })]);
});

it('owners reach only their own schedules, at most the limit of them', () => {
  temp = tempDatabase();
  const store = createScheduleStore(temp.connect());
  const { id } = store.create(input('agt_1', 1000), 2);
  store.create(input('agt_1', 2000), 2);
  expect(() => store.create(input('agt_1', 3000), 2)).toThrow(
    expect.objectContaining({ code: 'LIMIT_EXCEEDED' }),
  );
  expect(store.delete('tn_b', 'agt_1', id)).toBe(false);
  expect(store.delete('tn_a', 'agt_2', id)).toBe(false);
  expect(store.list('tn_a', 'agt_2')).toEqual([]);
  expect(store.deleteAgent('agt_1')).toBe(2);
  expect(store.nextDue()).toBeUndefined();
});
