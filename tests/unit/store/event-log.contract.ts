// The EventLog contract: every implementation runs this suite through a one-line test file.
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionEvent, SessionEventInput } from '../../../host/store/types.ts';
import { until } from '../../helpers/until.ts';
import type { EventLogInstance, Harness } from './harness.ts';

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

export const runEventLogContract = (harness: Harness<EventLogInstance>) => {
  describe(`EventLog contract (${harness.name})`, () => {
    let instance: EventLogInstance;
    const open = (options?: { batchWindowMs?: number }) => {
      instance = harness.open(options);
      return instance;
    };
    afterEach(() => instance?.cleanup());

    it('gives each session gap-free seqs from 1 across many appends, batches and ticks', async () => {
      const { log } = open();
      for (let round = 0; round < 50; round++) {
        log.append([ev('a'), ev('b'), ev('a')]);
        log.append([ev('a')]);
        if (round % 7 === 0) await tick();
        if (round % 11 === 0) await log.flush();
      }
      await log.flush();
      expect(seqs(log.list('a', { limit: 5000 }))).toEqual(range(1, 150));
      expect(seqs(log.list('b', { limit: 5000 }))).toEqual(range(1, 50));
    });

    it('returns the assigned seq and time from append, in input order', () => {
      const { log } = open();
      const out = log.append([ev('s', 'tool.call'), ev('s', 'tool.result')]);
      expect(out.map((e) => [e.seq, e.type])).toEqual([
        [1, 'tool.call'],
        [2, 'tool.result'],
      ]);
      expect(typeof out[0]!.at).toBe('number');
    });

    it('lets readers see appended events before and after they are flushed', async () => {
      const { log } = open();
      log.append([{ ...ev('s', 'tool.call'), callId: 'c1' }]);
      await log.flush();
      log.append([
        { ...ev('s', 'tool.result', { ok: true }), callId: 'c1', parentCallId: 'p1', surface: 'log-only' },
      ]);
      const before = log.list('s');
      await log.flush();
      expect(log.list('s')).toEqual(before);
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
      const { log } = open();
      log.append(range(1, 30).map(() => ev('s')));
      await log.flush();
      log.append(range(31, 40).map(() => ev('s')));
      expect(seqs(log.list('s', { afterSeq: 25, limit: 10 }))).toEqual(range(26, 35));
      expect(seqs(log.list('s', { afterSeq: 35 }))).toEqual(range(36, 40));
      expect(seqs(log.list('s', { limit: 3 }))).toEqual([1, 2, 3]);
      expect(log.list('s', { afterSeq: 40 })).toEqual([]);
      expect(log.list('nobody')).toEqual([]);
    });

    it('caps a page at 500 by default and 5000 at most', async () => {
      const { log } = open();
      log.append(range(1, 5200).map((i) => ev('s', 'x', i)));
      await log.flush();
      expect(log.list('s')).toHaveLength(500);
      expect(log.list('s', { limit: 100_000 })).toHaveLength(5000);
    });

    it('never changes an appended event when the caller mutates its data later', async () => {
      const { log } = open();
      const data = { items: [1] };
      log.append([ev('s', 'x', data)]);
      data.items.push(2);
      expect(log.list('s')[0]!.data).toEqual({ items: [1] });
      await log.flush();
      expect(log.list('s')[0]!.data).toEqual({ items: [1] });
    });

    it('rejects a whole append when one event cannot be stored, without using a seq', () => {
      const { log } = open();
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      expect(() => log.append([ev('s'), ev('s', 'x', cyclic as never)])).toThrow(/JSON/);
      expect(() => log.append([{ ...ev('s'), surface: 'nowhere' as never }])).toThrow(/surface/);
      expect(log.list('s')).toEqual([]);
      expect(log.append([ev('s')])[0]!.seq).toBe(1);
    });

    it("tells subscribers about their session's events in order, until they unsubscribe", async () => {
      const { log } = open();
      const got: number[] = [];
      const other: number[] = [];
      const stop = log.subscribe('s', (e) => got.push(e.seq));
      log.subscribe('t', (e) => other.push(e.seq));
      log.append([ev('s'), ev('t'), ev('s')]);
      await log.flush();
      expect(got).toEqual([1, 2]);
      expect(other).toEqual([1]);
      stop();
      log.append([ev('s')]);
      await log.flush();
      expect(got).toEqual([1, 2]);
    });

    it('delivers to subscribers without an explicit flush', async () => {
      const { log } = open();
      const got: SessionEvent[] = [];
      log.subscribe('s', (e) => got.push(e));
      log.append([ev('s', 'tool.call', { n: 1 })]);
      // Within a tick when written inline; a writer thread answers when its transaction commits.
      await until(() => got.length > 0, { what: 'the event delivered' });
      expect(got).toMatchObject([{ seq: 1, type: 'tool.call', data: { n: 1 } }]);
    });

    it('with a batch window, delivers appends after the window while readers see them at once', async () => {
      // A window long enough that no tick of a loaded machine outlasts it before the checks below.
      const { log } = open({ batchWindowMs: 500 });
      const got: number[] = [];
      log.subscribe('s', (e) => got.push(e.seq));
      log.append([ev('s')]);
      await tick();
      log.append([ev('s')]);
      expect(seqs(log.list('s'))).toEqual([1, 2]); // readers never wait for the window
      expect(got).toEqual([]);
      await until(() => got.length === 2, { what: 'the window to pass' });
      expect(got).toEqual([1, 2]);
    });

    it('keeps notifying other subscribers when one throws', async () => {
      const { log } = open();
      const got: number[] = [];
      log.subscribe('s', () => {
        throw new Error('listener bug');
      });
      log.subscribe('s', (e) => got.push(e.seq));
      log.append([ev('s')]);
      await log.flush();
      expect(got).toEqual([1]);
    });

    it('refuses appends after close', () => {
      const { log } = open();
      log.close();
      expect(() => log.append([ev('s')])).toThrow(expect.objectContaining({ code: 'SHUTTING_DOWN' }));
    });

    describe('durability (implementations with storage)', () => {
      it('makes flushed events visible to a second process without a close', async (ctx) => {
        const { log, reopen } = open();
        if (reopen === undefined) return ctx.skip();
        log.append(range(1, 20).map((i) => ev('s', 'x', i)));
        await log.flush();
        expect(
          reopen()
            .list('s')
            .map((e) => e.data),
        ).toEqual(range(1, 20));
      });

      it('keeps every event across close and reopen, and continues the seq without gaps', async (ctx) => {
        const { log, reopen } = open();
        if (reopen === undefined) return ctx.skip();
        for (let i = 0; i < 10; i++) log.append([ev('s'), ev('t')]);
        log.close(); // close writes what is queued
        const again = reopen();
        expect(again.append([ev('s')])[0]!.seq).toBe(11);
        await again.flush();
        again.close();
        const third = reopen();
        expect(seqs(third.list('s'))).toEqual(range(1, 11));
        expect(seqs(third.list('t'))).toEqual(range(1, 10));
      });

      it('stores gap-free seqs even when two processes append to the same session', async (ctx) => {
        const { log, reopen } = open();
        if (reopen === undefined) return ctx.skip();
        const other = reopen();
        const seen: number[] = [];
        other.subscribe('s', (e) => seen.push(e.seq));
        log.append([ev('s', 'from.a'), ev('s', 'from.a')]);
        other.append([ev('s', 'from.b')]); // also believes it is seq 1
        await log.flush();
        await other.flush();
        log.append([ev('s', 'from.a')]);
        await log.flush();
        const stored = reopen().list('s');
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
