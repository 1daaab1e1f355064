// The EventLog contract: every implementation runs this suite through a one-line test file, with
// an async factory (event-log-factory.ts).
import { describe, expect, it } from 'vitest';
import type { SessionEvent, SessionEventInput } from '../../../host/store/types.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';
import { until } from '../../helpers/until.ts';
import type { EventLogContractInstance, EventLogFactory } from './event-log-factory.ts';

const ev = (
  sessionId: string,
  type = 'tool.call',
  data: SessionEventInput['data'] = {},
): SessionEventInput => ({
  sessionId,
  type,
  surface: 'current',
  data,
});

const seqs = (events: SessionEvent[]) => events.map((e) => e.seq);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const tick = () => new Promise((resolve) => setImmediate(resolve));

export const runEventLogContract = (factory: EventLogFactory) => {
  describe(`EventLog contract (${factory.name})`, () => {
    const open = closedAfterEach(
      (options?: { batchWindowMs?: number; batchIntervalMs?: number }): Promise<EventLogContractInstance> =>
        factory.open(options),
      (opened) => opened.cleanup(),
    );

    it('gives each session gap-free seqs from 1 across many appends, batches and ticks', async () => {
      const { log } = await open();
      for (let round = 0; round < 50; round++) {
        void log.append([ev('a'), ev('b'), ev('a')]);
        void log.append([ev('a')]);
        if (round % 7 === 0) await tick();
        if (round % 11 === 0) await log.flush();
      }
      await log.flush();
      expect(seqs(await log.list('a', { limit: 5000 }))).toEqual(range(1, 150));
      expect(seqs(await log.list('b', { limit: 5000 }))).toEqual(range(1, 50));
    });

    it('returns the assigned seq and time from append, in input order', async () => {
      const { log } = await open();
      const out = await log.append([ev('s', 'tool.call'), ev('s', 'tool.result')]);
      expect(out.map((e) => [e.seq, e.type])).toEqual([
        [1, 'tool.call'],
        [2, 'tool.result'],
      ]);
      expect(typeof out[0]!.at).toBe('number');
    });

    it('keeps call order when appends are not awaited one by one', async () => {
      const { log } = await open();
      const first = log.append([ev('s', 'one')]);
      const second = log.append([ev('s', 'two'), ev('t', 'two')]);
      const third = log.append([ev('s', 'three')]);
      expect((await first).map((e) => e.seq)).toEqual([1]);
      expect((await second).map((e) => e.seq)).toEqual([2, 1]);
      expect((await third).map((e) => e.seq)).toEqual([3]);
      expect((await log.list('s')).map((e) => e.type)).toEqual(['one', 'two', 'three']);
    });

    it("tells a session's last seq, queued events and appends not awaited included", async () => {
      const { log } = await open({ batchWindowMs: 50 });
      expect(await log.lastSeq?.('s')).toBe(0);
      void log.append([ev('s'), ev('s')]);
      void log.append([ev('s')]);
      expect(await log.lastSeq?.('s')).toBe(3);
      expect(await log.lastSeq?.('t')).toBe(0);
      await log.flush();
      expect(await log.lastSeq?.('s')).toBe(3);
    });

    it('lets readers see appended events before and after they are flushed', async () => {
      const { log } = await open();
      await log.append([{ ...ev('s', 'tool.call'), callId: 'c1' }]);
      await log.flush();
      await log.append([
        { ...ev('s', 'tool.result', { ok: true }), callId: 'c1', parentCallId: 'p1', surface: 'log-only' },
      ]);
      const before = await log.list('s');
      await log.flush();
      expect(await log.list('s')).toEqual(before);
      expect(before[1]).toMatchObject({
        seq: 2,
        type: 'tool.result',
        callId: 'c1',
        parentCallId: 'p1',
        surface: 'log-only',
        data: { ok: true },
      });
      expect(before[0]).not.toHaveProperty('parentCallId');
    });

    it('pages with afterSeq and limit, over both stored and queued events', async () => {
      const { log } = await open();
      await log.append(range(1, 30).map(() => ev('s')));
      await log.flush();
      await log.append(range(31, 40).map(() => ev('s')));
      expect(seqs(await log.list('s', { afterSeq: 25, limit: 10 }))).toEqual(range(26, 35));
      expect(seqs(await log.list('s', { afterSeq: 35 }))).toEqual(range(36, 40));
      expect(seqs(await log.list('s', { limit: 3 }))).toEqual([1, 2, 3]);
      expect(await log.list('s', { afterSeq: 40 })).toEqual([]);
      expect(await log.list('nobody')).toEqual([]);
    });

    it('caps a page at 500 by default and 5000 at most', async () => {
      const { log } = await open();
      await log.append(range(1, 5200).map((i) => ev('s', 'x', i)));
      await log.flush();
      expect(await log.list('s')).toHaveLength(500);
      expect(await log.list('s', { limit: 100_000 })).toHaveLength(5000);
    });

    it('never changes an appended event when the caller mutates its data later', async () => {
      const { log } = await open();
      const data = { items: [1] };
      const appended = log.append([ev('s', 'x', data)]);
      data.items.push(2);
      await appended;
      expect((await log.list('s'))[0]!.data).toEqual({ items: [1] });
      await log.flush();
      expect((await log.list('s'))[0]!.data).toEqual({ items: [1] });
    });

    it('rejects a whole append when one event cannot be stored, without using a seq', async () => {
      const { log } = await open();
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      await expect(log.append([ev('s'), ev('s', 'x', cyclic as never)])).rejects.toThrow(/JSON/);
      await expect(log.append([{ ...ev('s'), surface: 'nowhere' as never }])).rejects.toThrow(/surface/);
      // What no backend may fail to store later, after the append was accepted.
      await expect(log.append([ev('s'), { ...ev('s'), callId: 'c\u0000' }])).rejects.toThrow(/NUL/);
      await expect(log.append([ev('s', 'x\u0000')])).rejects.toThrow(/NUL/);
      await log.append([ev('t', 'x', { text: 'a\u0000b' })]); // data is JSON: a NUL is escaped
      await log.flush();
      expect((await log.list('t'))[0]!.data).toEqual({ text: 'a\u0000b' });
      expect(await log.list('s')).toEqual([]);
      expect((await log.append([ev('s')]))[0]!.seq).toBe(1);
    });

    it("tells subscribers about their session's events in order, until they unsubscribe", async () => {
      const { log } = await open();
      const got: number[] = [];
      const other: number[] = [];
      const stop = log.subscribe('s', (e) => got.push(e.seq));
      log.subscribe('t', (e) => other.push(e.seq));
      await log.append([ev('s'), ev('t'), ev('s')]);
      await log.flush();
      expect(got).toEqual([1, 2]);
      expect(other).toEqual([1]);
      stop();
      await log.append([ev('s')]);
      await log.flush();
      expect(got).toEqual([1, 2]);
    });

    it('delivers to subscribers without an explicit flush', async () => {
      const { log } = await open();
      const got: SessionEvent[] = [];
      log.subscribe('s', (e) => got.push(e));
      await log.append([ev('s', 'tool.call', { n: 1 })]);
      // Within a tick when written inline; a writer thread answers when its transaction commits.
      await until(() => got.length > 0, { what: 'the event delivered' });
      expect(got).toMatchObject([{ seq: 1, type: 'tool.call', data: { n: 1 } }]);
    });

    it('with a batch window, delivers appends after the window while readers see them at once', async () => {
      // A window long enough that no tick of a loaded machine outlasts it before the checks below.
      const { log } = await open({ batchWindowMs: 500 });
      const got: number[] = [];
      log.subscribe('s', (e) => got.push(e.seq));
      await log.append([ev('s')]);
      await tick();
      await log.append([ev('s')]);
      expect(seqs(await log.list('s'))).toEqual([1, 2]); // readers never wait for the window
      expect(got).toEqual([]);
      await until(() => got.length === 2, { what: 'the window to pass' });
      expect(got).toEqual([1, 2]);
    });

    it('with a batch interval, writes the first append at once and holds the next until the interval passes', async () => {
      // An interval long enough that no tick of a loaded machine outlasts it before the checks below.
      const { log } = await open({ batchIntervalMs: 500 });
      const got: number[] = [];
      log.subscribe('s', (e) => got.push(e.seq));
      await log.append([ev('s')]);
      await until(() => got.length === 1, { what: 'the first append of a quiet log to be written' });
      await log.append([ev('s')]);
      await tick();
      await tick();
      expect(seqs(await log.list('s'))).toEqual([1, 2]); // readers never wait for the interval
      expect(got).toEqual([1]);
      await until(() => got.length === 2, { what: 'the interval to pass' });
      await log.append([ev('s')]);
      await log.flush(); // flush never waits for the interval
      expect(got).toEqual([1, 2, 3]);
    });

    it('gives a durable read only what is stored: what a client is shown is never handed out again', async () => {
      const { log } = await open({ batchWindowMs: 500 });
      await log.append([ev('s')]);
      await log.flush();
      await log.append([ev('s')]);
      expect(seqs(await log.list('s', { durable: true }))).toEqual([1]);
      expect(seqs(await log.list('s'))).toEqual([1, 2]);
      await log.flush();
      expect(seqs(await log.list('s', { durable: true }))).toEqual([1, 2]);
    });

    it('keeps notifying other subscribers when one throws', async () => {
      const { log } = await open();
      const got: number[] = [];
      log.subscribe('s', () => {
        throw new Error('listener bug');
      });
      log.subscribe('s', (e) => got.push(e.seq));
      await log.append([ev('s')]);
      await log.flush();
      expect(got).toEqual([1]);
    });

    it('refuses appends after close', async () => {
      const { log } = await open();
      await log.close();
      await expect(log.append([ev('s')])).rejects.toThrow(expect.objectContaining({ code: 'SHUTTING_DOWN' }));
    });

    describe('durability (implementations with storage)', () => {
      it('makes flushed events visible to a second process without a close', async (ctx) => {
        const { log, reopen } = await open();
        if (reopen === undefined) return ctx.skip();
        await log.append(range(1, 20).map((i) => ev('s', 'x', i)));
        await log.flush();
        const other = await reopen();
        expect((await other.list('s')).map((e) => e.data)).toEqual(range(1, 20));
      });

      it('keeps every event across close and reopen, and continues the seq without gaps', async (ctx) => {
        const { log, reopen } = await open();
        if (reopen === undefined) return ctx.skip();
        for (let i = 0; i < 10; i++) void log.append([ev('s'), ev('t')]);
        await log.close(); // close writes what is queued
        const again = await reopen();
        expect(await again.lastSeq?.('s')).toBe(10);
        expect((await again.append([ev('s')]))[0]!.seq).toBe(11);
        await again.flush();
        await again.close();
        const third = await reopen();
        expect(seqs(await third.list('s'))).toEqual(range(1, 11));
        expect(seqs(await third.list('t'))).toEqual(range(1, 10));
      });

      it('stores gap-free seqs even when two processes append to the same session', async (ctx) => {
        const { log, reopen } = await open();
        if (reopen === undefined) return ctx.skip();
        const other = await reopen();
        const seen: number[] = [];
        other.subscribe('s', (e) => seen.push(e.seq));
        await log.append([ev('s', 'from.a'), ev('s', 'from.a')]);
        await other.append([ev('s', 'from.b')]); // also believes it is seq 1
        await log.flush();
        await other.flush();
        await log.append([ev('s', 'from.a')]);
        await log.flush();
        const stored = await (await reopen()).list('s');
        expect(seqs(stored)).toEqual([1, 2, 3, 4]);
        // Which process commits first is a race when both write on threads; neither loses a row.
        expect(stored.map((e) => e.type).sort()).toEqual(['from.a', 'from.a', 'from.a', 'from.b']);
        expect(stored.at(-1)?.type).toBe('from.a');
        const b = stored.find((e) => e.type === 'from.b');
        expect(seen).toEqual([b?.seq]); // subscribers see the seq that was stored
      });
    });
  });
};
