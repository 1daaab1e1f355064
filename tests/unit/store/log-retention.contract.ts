// The LogRetentionStore contract (host/store/log-retention-port.ts): every backend runs it on a
// whole Store through a one-line test, with a clock the test moves. What a user would notice: old
// events go as a prefix of each session (the rest gap-free, pages start at firstSeq, appends go on
// after the last seq), payloads go with their last use and never while a kept event uses them,
// the tenant's usage falls by what went, a byte limit takes the tenant's oldest events first
// across sessions, a deleted agent's log goes whole after its grace, and other tenants keep all.
import { describe, expect, it } from 'vitest';
import type { RetentionRule, SweptSlice } from '../../../host/store/log-retention-port.ts';
import type { Store } from '../../../host/store/store.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface RetentionHarness {
  name: string;
  open(now: () => number): Promise<{ store: Store; close(): Promise<void> | void }>;
}

const BIG_P = 'p'.repeat(40_000);
const BIG_Q = 'q'.repeat(40_000);

const agentOf = async (store: Store, tenantId: string) =>
  store.agents.create({ tenantId, preset: 'standard', mode: 'direct', config: {} });

const say = (store: Store, sessionId: string, texts: string[]) =>
  store.events.append(
    texts.map((text) => ({ sessionId, type: 'message.user', surface: 'current' as const, data: { text } })),
  );

/** Slices until one removes nothing; what they removed. */
const sweepAll = async (store: Store, tenantId: string, rule: RetentionRule, limit: number) => {
  const slices: SweptSlice[] = [];
  for (;;) {
    const slice = await store.logRetention.sweepSlice(tenantId, rule, limit);
    if (slice.events === 0) return slices;
    slices.push(slice);
  }
};

/** The tenant's log bytes as stored (the event log's own count learns of removals by release()). */
const usageOf = async (store: Store, tenantId: string) =>
  (await store.logRetention.tenants()).find((u) => u.tenantId === tenantId)?.bytes ?? 0;

const seqs = async (store: Store, sessionId: string) =>
  (await store.events.list(sessionId, { limit: 5000 })).map((e) => e.seq);

export const runLogRetentionContract = (harness: RetentionHarness) => {
  describe(`LogRetentionStore contract (${harness.name})`, () => {
    let clock = 1_000;
    const open = closedAfterEach(() => {
      clock = 1_000;
      return harness.open(() => clock);
    });

    it('removes events older than the cutoff as a prefix, keeps payloads still used, and frees their bytes', async () => {
      const { store } = await open();
      const a = await store.tenants.createTenant('a');
      const b = await store.tenants.createTenant('b');
      const agent = await agentOf(store, a.id);
      const other = await agentOf(store, b.id);
      await say(store, agent.id, ['one', BIG_P, BIG_Q, ...Array.from({ length: 7 }, (_, i) => `old ${i}`)]);
      await say(store, other.id, ['theirs', BIG_P, 'more', 'and more', 'last']);
      clock = 5_000;
      await say(store, agent.id, ['new', BIG_Q, 'new 2', 'new 3', 'new 4']);
      await store.events.flush();
      const before = await usageOf(store, a.id);
      const theirs = await usageOf(store, b.id);

      const slices = await sweepAll(store, a.id, { before: 3_000 }, 4);
      expect(slices.map((s) => s.events)).toEqual([4, 4, 2]);
      expect(slices.every((s) => s.sessionId === agent.id && s.reason === 'age')).toBe(true);
      expect(slices.at(-1)!.firstSeq).toBe(11);
      // P went with its last use; Q is used by event 12 and stays.
      expect(slices.reduce((n, s) => n + s.payloads, 0)).toBe(1);
      const freed = slices.reduce((n, s) => n + s.bytes, 0);
      expect(freed).toBeGreaterThan(40_000);
      expect(await usageOf(store, a.id)).toBe(before - freed);
      const counted = (await store.events.usage()).find((u) => u.tenantId === a.id)!.bytes;
      store.events.release(a.id, freed);
      expect((await store.events.usage()).find((u) => u.tenantId === a.id)!.bytes).toBe(counted - freed);

      expect(await seqs(store, agent.id)).toEqual([11, 12, 13, 14, 15]);
      expect(await store.events.firstSeq?.(agent.id)).toBe(11);
      const kept = await store.events.list(agent.id, { afterSeq: 11, limit: 1 });
      expect(kept[0]!.data).toEqual({ text: BIG_Q });
      // The other tenant, whose payload has the same hash, keeps everything.
      expect(await seqs(store, other.id)).toEqual([1, 2, 3, 4, 5]);
      expect((await store.events.list(other.id, { afterSeq: 1, limit: 1 }))[0]!.data).toEqual({
        text: BIG_P,
      });
      expect(await usageOf(store, b.id)).toBe(theirs);
      // Appends go on after the last seq; a second sweep under the same rule removes nothing.
      expect((await say(store, agent.id, ['after']))[0]!.seq).toBe(16);
      await store.events.flush();
      expect(await sweepAll(store, a.id, { before: 3_000 }, 4)).toEqual([]);
      expect(await seqs(store, agent.id)).toEqual([11, 12, 13, 14, 15, 16]);
    });

    it('a byte limit removes the tenant oldest events first, across its sessions, until the log fits', async () => {
      const { store } = await open();
      const a = await store.tenants.createTenant('a');
      const first = await agentOf(store, a.id);
      const second = await agentOf(store, a.id);
      const text = (i: number) => `${'w'.repeat(500)} ${i}`;
      await say(
        store,
        first.id,
        Array.from({ length: 10 }, (_, i) => text(i)),
      );
      clock = 2_000;
      await say(
        store,
        second.id,
        Array.from({ length: 10 }, (_, i) => text(i)),
      );
      clock = 3_000;
      await say(
        store,
        first.id,
        Array.from({ length: 10 }, (_, i) => text(i)),
      );
      await store.events.flush();
      const before = await usageOf(store, a.id);
      const maxBytes = Math.floor(before / 2);

      const slices = await sweepAll(store, a.id, { maxBytes }, 3);
      expect(slices.every((s) => s.reason === 'bytes')).toBe(true);
      expect(await usageOf(store, a.id)).toBeLessThanOrEqual(maxBytes);
      // Half the bytes: the 10 oldest of `first`, then some of `second`; the newest 10 of `first` stay.
      expect(await store.events.firstSeq?.(first.id)).toBe(11);
      expect(await seqs(store, first.id)).toEqual(Array.from({ length: 10 }, (_, i) => 11 + i));
      const kept = await seqs(store, second.id);
      expect(kept.length).toBeGreaterThan(0);
      expect(kept.length).toBeLessThan(10);
      expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => 11 - kept.length + i));
    });

    it("a deleted agent's log goes whole once its grace has passed; a live agent's stays", async () => {
      const { store } = await open();
      const a = await store.tenants.createTenant('a');
      const gone = await agentOf(store, a.id);
      const live = await agentOf(store, a.id);
      await say(store, gone.id, ['one', BIG_P, 'three']);
      await say(store, live.id, ['one', 'two']);
      await store.events.flush();
      clock = 10_000;
      expect(await store.agents.markDeleted(a.id, gone.id)).toBe(true);
      expect(await sweepAll(store, a.id, { deletedBefore: 10_000 }, 100)).toEqual([]);

      const slices = await sweepAll(store, a.id, { deletedBefore: 10_001 }, 2);
      expect(slices.map((s) => [s.reason, s.events])).toEqual([
        ['deleted', 2],
        ['deleted', 1],
      ]);
      expect(slices.reduce((n, s) => n + s.payloads, 0)).toBe(1);
      expect(await seqs(store, gone.id)).toEqual([]);
      expect(await store.events.firstSeq?.(gone.id)).toBe(4);
      expect(await seqs(store, live.id)).toEqual([1, 2]);
    });

    it('an empty rule or an unknown tenant removes nothing', async () => {
      const { store } = await open();
      const a = await store.tenants.createTenant('a');
      const agent = await agentOf(store, a.id);
      await say(store, agent.id, ['one']);
      await store.events.flush();
      expect(await store.logRetention.sweepSlice(a.id, {}, 10)).toMatchObject({ events: 0 });
      expect(await store.logRetention.sweepSlice('nobody', { before: 1e15, maxBytes: 0 }, 10)).toMatchObject({
        events: 0,
      });
      expect(await store.logRetention.tenants()).toEqual([{ tenantId: a.id, bytes: expect.any(Number) }]);
      expect(await seqs(store, agent.id)).toEqual([1]);
    });
  });
};
