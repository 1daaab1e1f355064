// The RequestStore contract: every implementation runs this suite through a one-line test file,
// giving it an async factory that opens a fresh store (request-store.harness.ts).

import { describe, expect, it } from 'vitest';
import type { HostRequest } from '../../../host/requests/port.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';
import { until } from '../../helpers/until.ts';
import type { OpenRequestStore, RequestStoreInstance } from './request-store.harness.ts';

const input = (expiresInMs = 60_000, sessionId = 's1') => ({
  sessionId,
  kind: 'approval' as const,
  callId: 'call_1',
  payload: { tool: 'bash', arguments: { command: 'rm -rf build' } },
  expiresAt: Date.now() + expiresInMs,
});

export const runRequestStoreContract = (name: string, openStore: OpenRequestStore) => {
  describe(`RequestStore contract (${name})`, () => {
    const open = closedAfterEach(
      (options?: { now?: () => number; pollMs?: number }): Promise<RequestStoreInstance> =>
        openStore(options),
    );

    it('creates pending requests with req_ ids that get and list return', async () => {
      const { store } = await open();
      const a = await store.create(input());
      const b = await store.create(input(60_000, 's2'));
      expect(a.id).toMatch(/^req_[\w-]{21}$/);
      expect(a).toMatchObject({
        state: 'pending',
        kind: 'approval',
        callId: 'call_1',
        payload: input().payload,
      });
      expect(await store.get(a.id)).toEqual(a);
      expect((await store.list('s1')).map((r) => r.id)).toEqual([a.id]);
      expect((await store.list('s2', 'pending')).map((r) => r.id)).toEqual([b.id]);
      expect(await store.list('s2', 'answered')).toEqual([]);
      expect(await store.get('req_missing')).toBeUndefined();
    });

    it('refuses a request without a finite expiry, and any once closed', async () => {
      const { store } = await open();
      await expect(store.create({ ...input(), expiresAt: Number.NaN })).rejects.toMatchObject({
        code: 'BAD_REQUEST',
      });
      store.close();
      await expect(store.create(input())).rejects.toMatchObject({ code: 'SHUTTING_DOWN' });
    });

    it('lets only the first answer win', async () => {
      const { store } = await open();
      const r = await store.create(input());
      expect(await store.answer(r.id, { allow: true })).toBe(true);
      expect(await store.answer(r.id, { allow: false })).toBe(false);
      expect(await store.cancel(r.id)).toBe(false);
      expect(await store.get(r.id)).toMatchObject({ state: 'answered', answer: { allow: true } });
      expect(await store.answer('req_missing', 1)).toBe(false);
    });

    it('lets exactly one of two answers given at once win', async () => {
      const { store } = await open();
      const r = await store.create(input());
      const results = await Promise.all([store.answer(r.id, 'first'), store.answer(r.id, 'second')]);
      expect(results.filter(Boolean)).toHaveLength(1);
      expect((await store.get(r.id))?.answer).toBe(results[0] ? 'first' : 'second');
    });

    it('wakes every waiter with the answered request', async () => {
      const { store } = await open();
      const r = await store.create(input());
      const waits = [store.wait(r.id), store.wait(r.id)];
      setTimeout(() => void store.answer(r.id, { output: 'done' }), 5);
      for (const settled of await Promise.all(waits)) {
        expect(settled).toMatchObject({ id: r.id, state: 'answered', answer: { output: 'done' } });
      }
      await expect(store.wait(r.id)).resolves.toMatchObject({ state: 'answered' });
    });

    it('wakes a waiter whose request is answered while its wait is still reading', async () => {
      const { store } = await open();
      const r = await store.create(input());
      const waiting = store.wait(r.id);
      expect(await store.answer(r.id, 'now')).toBe(true);
      await expect(waiting).resolves.toMatchObject({ state: 'answered', answer: 'now' });
    });

    it('settles cancelled requests for waiters and refuses later answers', async () => {
      const { store } = await open();
      const r = await store.create(input());
      const waiting = store.wait(r.id);
      expect(await store.cancel(r.id)).toBe(true);
      await expect(waiting).resolves.toMatchObject({ state: 'cancelled' });
      expect(await store.answer(r.id, 'late')).toBe(false);
      expect(await store.get(r.id)).not.toHaveProperty('answer');
    });

    it('expires a request at expiresAt: waiters wake and answers are denied', async () => {
      const { store } = await open();
      const r = await store.create(input(40));
      const settled = await store.wait(r.id);
      expect(settled.state).toBe('expired');
      expect(Date.now()).toBeGreaterThanOrEqual(r.expiresAt); // not before its time
      expect(await store.answer(r.id, { allow: true })).toBe(false);
      expect((await store.list('s1', 'expired')).map((x) => x.id)).toEqual([r.id]);
    });

    it('reads a request past its expiry as expired even before its timer runs', async () => {
      let now = Date.now();
      const { store } = await open({ now: () => now });
      const r = await store.create({ ...input(), expiresAt: now + 1000 });
      now += 1001;
      expect(await store.answer(r.id, { allow: true })).toBe(false);
      expect((await store.get(r.id))?.state).toBe('expired');
    });

    it('rejects a wait on abort with ABORTED, and on an unknown id with NOT_FOUND', async () => {
      const { store } = await open();
      const r = await store.create(input());
      const controller = new AbortController();
      const waiting = store.wait(r.id, controller.signal);
      controller.abort(new Error('client went away'));
      await expect(waiting).rejects.toMatchObject({ code: 'ABORTED' });
      await expect(store.wait(r.id, AbortSignal.abort())).rejects.toMatchObject({ code: 'ABORTED' });
      await expect(store.wait('req_missing')).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect((await store.get(r.id))?.state).toBe('pending');
    });

    it('records created, answered, expired and cancelled in the session event log', async () => {
      const { store, events } = await open();
      const answered = await store.create(input());
      await store.answer(answered.id, { allow: true });
      const cancelled = await store.create(input());
      await store.cancel(cancelled.id);
      const expired = await store.create(input(10));
      await store.wait(expired.id);
      await events.flush();
      const log = (await events.list('s1')).map((e) => [e.type, (e.data as { requestId: string }).requestId]);
      expect(log).toEqual([
        ['request.created', answered.id],
        ['request.answered', answered.id],
        ['request.created', cancelled.id],
        ['request.cancelled', cancelled.id],
        ['request.created', expired.id],
        ['request.expired', expired.id],
      ]);
      expect((await events.list('s1'))[1]).toMatchObject({
        surface: 'log-only',
        callId: 'call_1',
        data: { answer: { allow: true } },
      });
    });

    it('drafts without storing; adopts a draft another transaction wrote (logged, expiry armed)', async () => {
      const { store, events, writeDraft } = await open();
      const draft = store.draft(input(40));
      expect(draft).toMatchObject({ id: expect.stringMatching(/^req_[\w-]{21}$/), state: 'pending' });
      expect(await store.get(draft.id)).toBeUndefined();
      expect(() => store.draft({ ...input(), expiresAt: Number.POSITIVE_INFINITY })).toThrow(
        expect.objectContaining({ code: 'BAD_REQUEST' }),
      );
      await writeDraft(draft); // what the other store's transaction does
      expect(await store.adopt(draft)).toEqual(draft);
      await expect(store.wait(draft.id)).resolves.toMatchObject({ state: 'expired' });
      // The expiry may be the other store's (its timer is armed too), logged by its own writer.
      const mine = await until(
        async () => {
          await events.flush();
          const found = (await events.list('s1')).filter(
            (e) => (e.data as { requestId: string }).requestId === draft.id,
          );
          return found.length >= 2 ? found : undefined;
        },
        { what: 'the draft created and expired in the log' },
      );
      expect(mine.map((e) => e.type)).toEqual(['request.created', 'request.expired']);
    });

    it('rejects waiters with SHUTTING_DOWN on close', async () => {
      const { store } = await open();
      const r = await store.create(input());
      const waiting = store.wait(r.id);
      store.close();
      await expect(waiting).rejects.toMatchObject({ code: 'SHUTTING_DOWN' });
    });

    describe('durability (implementations with storage)', () => {
      it('keeps pending requests across a restart: the new process can answer and wait', async (ctx) => {
        const { store, reopen } = await open();
        if (reopen === undefined) return ctx.skip();
        const r = await store.create(input());
        store.close();
        const next = await reopen();
        expect((await next.store.list('s1', 'pending')).map((x) => x.id)).toEqual([r.id]);
        const waiting = next.store.wait(r.id);
        expect(await next.store.answer(r.id, { allow: true })).toBe(true);
        await expect(waiting).resolves.toMatchObject({ state: 'answered', answer: { allow: true } });
      });

      it('reads requests that expired while no process ran as expired, and logs it', async (ctx) => {
        let now = Date.now();
        const { store, reopen } = await open({ now: () => now });
        if (reopen === undefined) return ctx.skip();
        const r = await store.create({ ...input(), expiresAt: now + 20 });
        store.close();
        now += 40; // while no process ran
        const next = await reopen();
        expect((await next.store.get(r.id))?.state).toBe('expired');
        expect(await next.store.answer(r.id, { allow: true })).toBe(false);
        // The expiry is logged once its backend update settled (request-core.ts), which on
        // PostgreSQL may come after the reads above: wait for the event, flushing as it comes.
        await until(async () => {
          await next.events.flush();
          return (await next.events.list('s1')).some((e) => e.type === 'request.expired');
        });
      });

      it('arms expiry for pending requests found at start', async (ctx) => {
        const { store, reopen } = await open();
        if (reopen === undefined) return ctx.skip();
        const r = await store.create(input(60));
        store.close();
        const next = await reopen();
        const settled: HostRequest = await next.store.wait(r.id);
        expect(settled.state).toBe('expired');
      });

      it('wakes a waiter when another process answers', async (ctx) => {
        const { store, reopen } = await open({ pollMs: 20 });
        if (reopen === undefined) return ctx.skip();
        const r = await store.create(input());
        const waiting = store.wait(r.id);
        expect(await (await reopen()).store.answer(r.id, { allow: true })).toBe(true);
        await expect(waiting).resolves.toMatchObject({ state: 'answered', answer: { allow: true } });
      });

      it('lets exactly one of two processes answer the same request', async (ctx) => {
        const { store, reopen } = await open();
        if (reopen === undefined) return ctx.skip();
        const r = await store.create(input());
        const other = (await reopen()).store;
        const results = [await other.answer(r.id, 'from B'), await store.answer(r.id, 'from A')];
        expect(results).toEqual([true, false]);
        expect((await store.get(r.id))?.answer).toBe('from B');
      });

      it('lets exactly one of two processes answering at once win, and both read its answer', async (ctx) => {
        const { store, reopen } = await open();
        if (reopen === undefined) return ctx.skip();
        const other = (await reopen()).store;
        for (let round = 0; round < 5; round++) {
          const r = await store.create(input());
          const results = await Promise.all([store.answer(r.id, 'from A'), other.answer(r.id, 'from B')]);
          expect(results.filter(Boolean)).toHaveLength(1);
          const winner = results[0] ? 'from A' : 'from B';
          expect((await store.get(r.id))?.answer).toBe(winner);
          expect((await other.get(r.id))?.answer).toBe(winner);
        }
      });
    });
  });
};
