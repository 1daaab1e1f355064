// The ScheduleStore contract: owners only reach their own schedules, at most the limit of them;
// due reads across owners in turns per tenant (each tenant's soonest first), nextDue the soonest;
// a fire counts only for the due time its firer read, so processes sharing the database fire a
// schedule once, and it writes its request in the same transaction (or, when it loses, nothing).
// Every implementation runs it through a one-line test file with an async factory.
import { describe, expect, it } from 'vitest';
import type { HostRequest } from '../../../host/requests/port.ts';
import type { ScheduleStore } from '../../../host/store/schedules.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface ScheduleStoreInstance {
  schedules: ScheduleStore;
  /** The stored host request `id`, as the request store would read it (the fire writes it). */
  requestOf(id: string): Promise<HostRequest | undefined>;
  /** Another instance over the same storage (a second process). */
  reopen?: () => Promise<ScheduleStore>;
  close(): Promise<void> | void;
}

export type OpenScheduleStore = () => Promise<ScheduleStoreInstance>;

const input = (agentId: string, nextAt: number, tenantId = 'tn_a') => ({
  tenantId,
  agentId,
  prompt: 'p',
  kind: 'every' as const,
  spec: { every_seconds: 60 },
  everyMs: 60_000,
  nextAt,
});

let serial = 0;
const reminder = (agentId: string): HostRequest => ({
  id: `req_contract_${++serial}`,
  sessionId: agentId,
  kind: 'reminder',
  callId: 'schedule:x',
  state: 'pending',
  payload: { prompt: 'p' },
  createdAt: 1000,
  expiresAt: Date.now() + 60_000,
});

export const runScheduleStoreContract = (name: string, openStore: OpenScheduleStore) =>
  describe(`ScheduleStore contract (${name})`, () => {
    const open = closedAfterEach((): Promise<ScheduleStoreInstance> => openStore());

    it('a due time fires once, whoever read it; a stale reader fires (and writes) nothing', async () => {
      const { schedules, requestOf } = await open();
      const { id } = await schedules.create(input('agt_1', 1000), 10);
      // Two processes read the schedule due at 1000; the first fires it.
      const first = reminder('agt_1');
      const second = reminder('agt_1');
      expect(await schedules.fire({ id, dueAt: 1000 }, 1000, 61_000, first)).toBe(true);
      expect(await schedules.fire({ id, dueAt: 1000 }, 1001, 61_001, second)).toBe(false);
      expect(await requestOf(first.id)).toEqual(first);
      expect(await requestOf(second.id)).toBeUndefined();
      expect(await schedules.list('tn_a', 'agt_1')).toEqual([
        expect.objectContaining({ nextAt: 61_000, fired: 1, lastFiredAt: 1000 }),
      ]);
    });

    it('a one-shot fire removes the schedule; a deleted one does not fire', async () => {
      const { schedules, requestOf } = await open();
      const once = await schedules.create({ ...input('agt_1', 1000), kind: 'after', everyMs: undefined }, 10);
      const gone = await schedules.create(input('agt_1', 2000), 10);
      const made = reminder('agt_1');
      expect(await schedules.fire({ id: once.id, dueAt: 1000 }, 1000, undefined, made)).toBe(true);
      expect(await requestOf(made.id)).toMatchObject({ state: 'pending' });
      expect(await schedules.delete('tn_a', 'agt_1', gone.id)).toBe(true);
      const late = reminder('agt_1');
      expect(await schedules.fire({ id: gone.id, dueAt: 2000 }, 2000, 62_000, late)).toBe(false);
      expect(await requestOf(late.id)).toBeUndefined();
      expect(await schedules.list('tn_a', 'agt_1')).toEqual([]);
    });

    it('two processes firing the same due time at once: one wins', async (ctx) => {
      const { schedules, requestOf, reopen } = await open();
      if (reopen === undefined) return ctx.skip();
      const other = await reopen();
      const { id } = await schedules.create(input('agt_1', 1000), 10);
      const made = [reminder('agt_1'), reminder('agt_1')];
      const fired = await Promise.all([
        schedules.fire({ id, dueAt: 1000 }, 1000, 61_000, made[0]!),
        other.fire({ id, dueAt: 1000 }, 1000, 61_000, made[1]!),
      ]);
      expect(fired.filter(Boolean)).toHaveLength(1);
      // Only the winner's request is written.
      const stored = await Promise.all(made.map((r) => requestOf(r.id)));
      expect(stored.map((r) => r !== undefined)).toEqual(fired);
      expect(await schedules.list('tn_a', 'agt_1')).toEqual([expect.objectContaining({ fired: 1 })]);
    });

    it('two processes creating at once never pass the limit', async (ctx) => {
      const { schedules, reopen } = await open();
      if (reopen === undefined) return ctx.skip();
      const other = await reopen();
      for (let limit = 1; limit <= 4; limit++) {
        const made = await Promise.allSettled([
          schedules.create(input('agt_1', 1000 * limit), limit),
          other.create(input('agt_1', 1000 * limit + 1), limit),
        ]);
        expect(made.filter((p) => p.status === 'fulfilled')).toHaveLength(1);
        expect(made.find((p) => p.status === 'rejected')).toMatchObject({
          reason: { code: 'LIMIT_EXCEEDED' },
        });
        expect(await other.list('tn_a', 'agt_1')).toHaveLength(limit);
      }
    });

    it('owners reach only their own schedules, at most the limit of them', async () => {
      const { schedules } = await open();
      const { id } = await schedules.create(input('agt_1', 1000), 2);
      await schedules.create(input('agt_1', 2000), 2);
      await expect(schedules.create(input('agt_1', 3000), 2)).rejects.toMatchObject({
        code: 'LIMIT_EXCEEDED',
      });
      expect(await schedules.delete('tn_b', 'agt_1', id)).toBe(false);
      expect(await schedules.delete('tn_a', 'agt_2', id)).toBe(false);
      expect(await schedules.list('tn_a', 'agt_2')).toEqual([]);
      expect((await schedules.list('tn_a', 'agt_1')).map((s) => s.nextAt)).toEqual([1000, 2000]);
      expect(await schedules.deleteAgent('agt_1')).toBe(2);
      expect(await schedules.nextDue()).toBeUndefined();
    });

    it("a tenant's agents together hold at most the tenant's limit of schedules", async () => {
      // Round 5 found: only each agent was bounded (32), and a tenant without an agents quota made
      // agents without end: a fire costs the API's thread ~0.25 ms, so 4,000 agents' schedules of a
      // minute took half of it and delayed every tenant's schedules behind theirs.
      const { schedules } = await open();
      for (const agent of ['agt_1', 'agt_2', 'agt_3']) await schedules.create(input(agent, 1000), 2, 3);
      await expect(schedules.create(input('agt_4', 1000), 2, 3)).rejects.toMatchObject({
        code: 'LIMIT_EXCEEDED',
        data: { limit: 'schedulesPerTenant', max: 3 },
      });
      // Another tenant is not counted.
      await schedules.create(input('agt_5', 1000, 'tn_b'), 2, 3);
    });

    it("due and nextDue read every owner's schedules, soonest first", async () => {
      const { schedules } = await open();
      await schedules.create(input('agt_1', 3000), 10);
      await schedules.create(input('agt_2', 1000, 'tn_b'), 10);
      await schedules.create(input('agt_1', 2000), 10);
      expect(await schedules.nextDue()).toBe(1000);
      expect((await schedules.due(2500, 10)).map((s) => s.nextAt)).toEqual([1000, 2000]);
      expect((await schedules.due(5000, 1)).map((s) => s.nextAt)).toEqual([1000]);
      expect(await schedules.due(500, 10)).toEqual([]);
    });

    it("one tenant's burst does not hold back another tenant's schedule due at the same time", async () => {
      // Found after round 5: due() read soonest first across tenants, so a tenant with more
      // schedules due at T than one wake-up fires (the scheduler's batch) held another tenant's
      // single schedule due at T (or later) behind all of theirs, one wake-up per batch.
      const { schedules } = await open();
      for (let i = 0; i < 12; i++) await schedules.create(input(`agt_a${i % 3}`, 1000 - i), 10, 100);
      await schedules.create(input('agt_b', 1000, 'tn_b'), 10);
      await schedules.create(input('agt_c', 2000, 'tn_c'), 10);
      const batch = await schedules.due(2000, 4);
      // Every tenant with something due is in the first batch, each tenant's soonest first.
      expect(batch.map((s) => s.tenantId).sort()).toEqual(['tn_a', 'tn_a', 'tn_b', 'tn_c']);
      expect(batch.filter((s) => s.tenantId === 'tn_a').map((s) => s.nextAt)).toEqual([989, 990]);
      // Within a round, soonest first across tenants.
      expect(batch.map((s) => s.nextAt)).toEqual([989, 1000, 2000, 990]);
      // Nothing is lost: a read large enough has every due schedule once, each tenant's in order.
      const all = await schedules.due(2000, 100);
      expect(all).toHaveLength(14);
      expect(new Set(all.map((s) => s.id)).size).toBe(14);
      expect(all.slice(0, 4).map((s) => s.nextAt)).toEqual([989, 1000, 2000, 990]);
      const a = all.filter((s) => s.tenantId === 'tn_a').map((s) => s.nextAt);
      expect(a).toEqual([...a].sort((x, y) => x - y));
    });

    it('with more tenants due than one read takes, a read takes one from each of the soonest', async () => {
      const { schedules } = await open();
      for (let t = 0; t < 5; t++)
        for (let i = 0; i < 3; i++)
          await schedules.create(input(`agt_${t}`, 1000 + 10 * t + i, `tn_${t}`), 10);
      expect((await schedules.due(2000, 3)).map((s) => [s.tenantId, s.nextAt])).toEqual([
        ['tn_0', 1000],
        ['tn_1', 1010],
        ['tn_2', 1020],
      ]);
    });
  });
