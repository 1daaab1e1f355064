// Large values and tenant budgets in the EventLog (issue 11: one small program stored ~954 MiB, one
// events page was 382 MiB). Every implementation runs this suite through its one-line test file.
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../host/json.ts';
import type { ClosableEventLog } from '../../../host/store/event-log-port.ts';
import type { SessionEvent, SessionEventInput } from '../../../host/store/types.ts';
import type { EventLogContractInstance, EventLogFactory } from './event-log-factory.ts';

const KiB = 1024;
const MiB = 1024 * KiB;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
/** A distinct string of `size` characters. */
const unique = (i: number, size: number) => `${i}:`.padEnd(size, String.fromCharCode(97 + (i % 26)));

const call = (sessionId: string, id: string, content: string): SessionEventInput => ({
  sessionId,
  type: 'tool.call',
  surface: 'log-only',
  callId: id,
  parentCallId: 'run_1',
  data: { name: 'write', arguments: { file_path: `${id}.txt`, content } },
});
const result = (sessionId: string, id: string, text: string): SessionEventInput => ({
  sessionId,
  type: 'tool.result',
  surface: 'log-only',
  callId: id,
  parentCallId: 'run_1',
  data: { name: 'write', ok: true, content: [{ type: 'text', text }], durationMs: 1 },
});
const usageOf = async (log: ClosableEventLog, tenantId: string) =>
  (await log.usage()).find((u) => u.tenantId === tenantId)?.bytes ?? 0;
/** The event as the API shows it: without the session id. */
const shown = ({ sessionId: _, ...rest }: SessionEvent) => rest;
// biome-ignore lint/suspicious/noExplicitAny: tests read event data by path
const dataOf = (e: SessionEvent): any => e.data;

export const runEventBudgetContract = (factory: EventLogFactory) => {
  describe(`EventLog payloads and budgets (${factory.name})`, () => {
    let instance: EventLogContractInstance | undefined;
    afterEach(async () => {
      await instance?.cleanup();
      instance = undefined;
    });

    it('stores a 1 MiB argument repeated by 1000 calls about once, and gives it back whole', async () => {
      instance = await factory.open({ tenantOf: () => 'tenant-a' });
      const { log } = instance;
      const big = 'x'.repeat(MiB);
      for (let i = 1; i <= 1000; i++) {
        void log.append([call('s', `c${i}`, big)]);
        if (i % 50 === 0) await log.flush();
      }
      await log.flush();
      const bytes = await usageOf(log, 'tenant-a');
      expect(bytes).toBeGreaterThan(MiB);
      expect(bytes).toBeLessThan(MiB + 1000 * 400); // one copy plus a small row per call
      // Internal readers get the value back in place.
      expect(dataOf((await log.list('s', { afterSeq: 999 }))[0]!).arguments.content).toBe(big);
      // Readers that ask for references get a marker, its listing, and the value on request.
      const ref = { pointer: '/arguments/content', sha256: sha256(JSON.stringify(big)), bytes: MiB + 2 };
      const [event] = await log.list('s', { afterSeq: 999, payloads: 'refs' });
      expect(dataOf(event!).arguments).toEqual({
        file_path: 'c1000.txt',
        content: { $ref: `sha256:${ref.sha256}`, bytes: ref.bytes },
      });
      expect(event!.payloads).toEqual([ref]);
      expect(await log.payload('s', 1000, '/arguments/content')).toBe(JSON.stringify(big));
      if (instance.reopen !== undefined) {
        const again = await instance.reopen();
        expect(await usageOf(again, 'tenant-a')).toBe(bytes);
        expect(dataOf((await again.list('s', { limit: 1 }))[0]!).arguments.content).toBe(big);
      }
    }, 180_000); // hashing 1 GiB takes a few seconds, more on a loaded machine

    it("answers one tenant's usage as the list of all has it, before and after a restart", async () => {
      const budget = 64 * KiB;
      instance = await factory.open({ tenantOf: (s) => s.split(':')[0]!, budgetBytes: budget });
      const { log } = instance;
      for (let t = 0; t < 5; t++) await log.append([call(`t${t}:s`, 'c1', 'x'.repeat(100 * (t + 1)))]);
      // Queued rows count before they are written, as in usage().
      const queued = await log.usageOf('t3');
      expect(queued).toEqual((await log.usage()).find((u) => u.tenantId === 't3'));
      expect(queued.bytes).toBeGreaterThan(400);
      await log.flush();
      for (let t = 0; t < 5; t++)
        expect(await log.usageOf(`t${t}`)).toEqual((await log.usage()).find((u) => u.tenantId === `t${t}`));
      // A tenant without a log, or an id nobody has: nothing used, the service's budget.
      expect(await log.usageOf("t9' OR 1=1 --")).toEqual({
        tenantId: "t9' OR 1=1 --",
        bytes: 0,
        budget,
        dropped: 0,
        refused: 0,
      });
      if (instance.reopen !== undefined) {
        const again = await instance.reopen();
        expect((await again.usageOf('t2')).bytes).toBe((await log.usageOf('t2')).bytes);
      }
    });

    it('keeps data that only looks like a marker as data', async () => {
      instance = await factory.open();
      const { log } = instance;
      const lookalike = { $ref: `sha256:${sha256('"x"')}`, bytes: 3 };
      await log.append([
        call('s', 'c1', 'x'),
        { ...call('s', 'c2', 'y'.repeat(40 * KiB)), data: { lookalike } },
      ]);
      await log.flush();
      const [, second] = await log.list('s', { payloads: 'refs' });
      expect(second!.data).toEqual({ lookalike });
      expect(second!.payloads).toBeUndefined();
      expect((await log.list('s'))[1]!.data).toEqual({ lookalike });
    });

    it('a tenant at its budget cannot grow the log while another tenant is unaffected', async () => {
      const budget = 256 * KiB;
      instance = await factory.open({
        tenantOf: (s) => s.split(':')[0]!,
        budgetBytes: budget,
        inlineBytes: KiB,
      });
      const { log } = instance;
      /** Appends calls of `size` until one is refused; returns how many got in. */
      const fill = async (from: number, size: number) => {
        for (let i = from; i < from + 5000; i++) {
          try {
            await log.append([call('a:1', `c${i}`, unique(i, size))]);
            await log.append([result('a:1', `c${i}`, 'ok')]);
          } catch (error) {
            expect(error).toMatchObject({ code: 'STORE_BUDGET_EXCEEDED' });
            return i - from;
          }
        }
        throw new Error('never refused');
      };
      const large = await fill(0, 64 * KiB);
      expect(large).toBe(3);
      // What is left still takes calls that fit, then nothing more.
      const small = await fill(100, 100);
      expect(small).toBeGreaterThan(10);
      await log.flush();
      const full = await usageOf(log, 'a');
      expect(full).toBeLessThanOrEqual(budget);
      expect(full).toBeGreaterThan(budget - KiB);
      // Every call that got in is in the log whole: nothing of theirs was dropped.
      const events = await log.list('a:1', { limit: 5000, payloads: 'refs' });
      expect(events.filter((e) => e.type === 'tool.call')).toHaveLength(large + small);
      expect(events.some((e) => e.payloads?.some((p) => p.dropped))).toBe(false);
      expect(JSON.parse(await log.payload('a:1', 1, '/arguments/content'))).toBe(unique(0, 64 * KiB));

      // At the budget: no new call is recorded, in any session of the tenant, and nothing grows.
      for (let i = 0; i < 50; i++) {
        await expect(
          log.append([call(`a:${i % 2}`, `more${i}`, unique(5000 + i, 64 * KiB))]),
        ).rejects.toThrow(expect.objectContaining({ code: 'STORE_BUDGET_EXCEEDED' }));
        await expect(log.append([call('a:1', `tiny${i}`, 'x')])).rejects.toThrow(
          expect.objectContaining({ code: 'STORE_BUDGET_EXCEEDED' }),
        );
      }
      await log.flush();
      expect(await usageOf(log, 'a')).toBe(full);
      expect((await log.usage()).find((u) => u.tenantId === 'a')).toMatchObject({ refused: 102, budget });

      // A call admitted before still gets its result recorded, small, with the large value's hash.
      const text = unique(9999, 200 * KiB);
      const [settled] = await log.append([result('a:1', 'c0', text)]);
      await log.flush();
      const stored = (await log.list('a:1', { afterSeq: settled!.seq - 1, payloads: 'refs' }))[0]!;
      expect(stored).toMatchObject({ type: 'tool.result', callId: 'c0' });
      expect(stored.payloads).toEqual([
        {
          pointer: '/content/0/text',
          sha256: sha256(JSON.stringify(text)),
          bytes: 200 * KiB + 2,
          dropped: true,
        },
      ]);
      await expect(log.payload('a:1', settled!.seq, '/content/0/text')).rejects.toThrow(
        expect.objectContaining({ code: 'NOT_FOUND' }),
      );
      expect((await usageOf(log, 'a')) - full).toBeLessThan(KiB);

      // Another tenant stores large values as before.
      const other = unique(1, 64 * KiB);
      await log.append([call('b:1', 'c1', other)]);
      await log.flush();
      expect(dataOf((await log.list('b:1'))[0]!).arguments.content).toBe(other);
      expect(await usageOf(log, 'b')).toBeGreaterThan(64 * KiB);
    });

    it('counts each value a full budget drops once, however many an append drops', async () => {
      instance = await factory.open({ tenantOf: () => 't', budgetBytes: 64 * KiB, inlineBytes: KiB });
      const { log } = instance;
      await log.append([call('s', 'c1', unique(1, 60 * KiB))]);
      const settled = await log.append([
        result('s', 'c1', unique(2, 10 * KiB)),
        result('s', 'c2', unique(3, 10 * KiB)),
      ]);
      expect(settled.map((e) => e.seq)).toEqual([2, 3]);
      await log.flush();
      expect((await log.usage()).find((u) => u.tenantId === 't')).toMatchObject({ dropped: 2, refused: 0 });
      const events = await log.list('s', { afterSeq: 1, payloads: 'refs' });
      expect(events.map((e) => e.payloads?.map((p) => p.dropped))).toEqual([[true], [true]]);
    });

    it('bounds pages in bytes, and a client can still read every event and payload', async () => {
      instance = await factory.open({ inlineBytes: 4 * KiB });
      const { log } = instance;
      const values: string[] = [];
      for (let i = 1; i <= 300; i++) {
        values.push(unique(i, 20 * KiB));
        void log.append([call('s', `c${i}`, values.at(-1)!)]);
        // A result whose 100 small parts together are large.
        void log.append([
          {
            ...result('s', `c${i}`, 'done'),
            data: { parts: Array.from({ length: 100 }, () => 'p'.repeat(300)) },
          },
        ]);
      }
      await log.flush();
      // An event whose small members add up to more than a page: still one event per page.
      const wide = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`k${i}`, 'w'.repeat(200)]));
      await log.append([{ ...call('s', 'wide', 'x'), data: wide as JsonValue }]);
      await log.flush();

      const maxBytes = 16 * KiB;
      const seen: SessionEvent[] = [];
      let pages = 0;
      for (let after = 0; ; pages++) {
        const page = await log.list('s', { afterSeq: after, limit: 5000, maxBytes, payloads: 'refs' });
        if (page.length === 0) break;
        expect(JSON.stringify(page.map(shown)).length).toBeLessThanOrEqual(maxBytes);
        seen.push(...page);
        after = page.at(-1)!.seq;
      }
      expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: 601 }, (_, i) => i + 1));
      expect(pages).toBeGreaterThan(10);
      for (const event of seen) {
        if (event.type !== 'tool.call' || event.callId === 'wide') continue;
        const i = Number(event.callId!.slice(1));
        expect(JSON.parse(await log.payload('s', event.seq, '/arguments/content'))).toBe(values[i - 1]);
      }
      const parts = seen.find((e) => e.type === 'tool.result')!;
      expect(parts.payloads?.map((p) => p.pointer)).toEqual(['/parts']);
      expect(JSON.parse(await log.payload('s', parts.seq, '/parts'))).toHaveLength(100);
      const wideEvent = seen.at(-1)!;
      expect(JSON.stringify(shown(wideEvent)).length).toBeLessThan(4 * KiB);
      // Its members did not fit one by one, so the whole data is one payload.
      expect(wideEvent.payloads!.map((p) => p.pointer)).toEqual(['']);
      const restored = JSON.parse(await log.payload('s', wideEvent.seq, ''));
      expect(restored).toEqual(wide);
      expect((await log.list('s', { afterSeq: 600 }))[0]!.data).toEqual(wide);
      // Even a page bound below one event's size returns that event.
      expect(await log.list('s', { afterSeq: 0, maxBytes: 1, payloads: 'refs' })).toHaveLength(1);
    });
  });
};
