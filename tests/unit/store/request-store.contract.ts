// The RequestStore contract: every implementation runs this suite through a one-line test file.
import { afterEach, describe, expect, it } from 'vitest';
import type { HostRequest } from '../../../host/requests/port.ts';
import type { Harness, RequestStoreInstance } from './harness.ts';

const input = (expiresInMs = 60_000, sessionId = 's1') => ({
  sessionId,
  kind: 'approval' as const,
  callId: 'call_1',
  payload: { tool: 'bash', arguments: { command: 'rm -rf build' } },
  expiresAt: Date.now() + expiresInMs,
});

export const runRequestStoreContract = (harness: Harness<RequestStoreInstance>) => {
  describe(`RequestStore contract (${harness.name})`, () => {
    let instance: RequestStoreInstance;
    const open = (options?: { now?: () => number; pollMs?: number }) => {
      instance = harness.open(options);
      return instance;
    };
    afterEach(() => instance?.cleanup());

    it('creates pending requests with req_ ids that get and list return', () => {
      const { store } = open();
      const a = store.create(input());
      const b = store.create(input(60_000, 's2'));
      expect(a.id).toMatch(/^req_[\w-]{21}$/);
      expect(a).toMatchObject({
        state: 'pending',
        kind: 'approval',
        callId: 'call_1',
        payload: input().payload,
      });
      expect(store.get(a.id)).toEqual(a);
      expect(store.list('s1').map((r) => r.id)).toEqual([a.id]);
      expect(store.list('s2', 'pending').map((r) => r.id)).toEqual([b.id]);
      expect(store.list('s2', 'answered')).toEqual([]);
      expect(store.get('req_missing')).toBeUndefined();
    });

    it('lets only the first answer win', async () => {
      const { store } = open();
      const r = store.create(input());
      expect(store.answer(r.id, { allow: true })).toBe(true);
      expect(store.answer(r.id, { allow: false })).toBe(false);
      expect(store.cancel(r.id)).toBe(false);
      expect(store.get(r.id)).toMatchObject({ state: 'answered', answer: { allow: true } });
      expect(store.answer('req_missing', 1)).toBe(false);
    });

    it('wakes every waiter with the answered request', async () => {
      const { store } = open();
      const r = store.create(input());
      const waits = [store.wait(r.id), store.wait(r.id)];
      setTimeout(() => store.answer(r.id, { output: 'done' }), 5);
      for (const settled of await Promise.all(waits)) {
        expect(settled).toMatchObject({ id: r.id, state: 'answered', answer: { output: 'done' } });
      }
      await expect(store.wait(r.id)).resolves.toMatchObject({ state: 'answered' });
    });

    it('settles cancelled requests for waiters and refuses later answers', async () => {
      const { store } = open();
      const r = store.create(input());
      const waiting = store.wait(r.id);
      expect(store.cancel(r.id)).toBe(true);
      await expect(waiting).resolves.toMatchObject({ state: 'cancelled' });
      expect(store.answer(r.id, 'late')).toBe(false);
      expect(store.get(r.id)).not.toHaveProperty('answer');
    });

    it('expires a request at expiresAt: waiters wake and answers are denied', async () => {
      const { store } = open();
      const r = store.create(input(40));
      const settled = await store.wait(r.id);
      expect(settled.state).toBe('expired');
      expect(Date.now()).toBeGreaterThanOrEqual(r.expiresAt); // not before its time
      expect(store.answer(r.id, { allow: true })).toBe(false);
      expect(store.list('s1', 'expired').map((x) => x.id)).toEqual([r.id]);
    });

    it('reads a request past its expiry as expired even before its timer runs', () => {
      let now = Date.now();
      const { store } = open({ now: () => now });
      const r = store.create({ ...input(), expiresAt: now + 1000 });
      now += 1001;
      expect(store.answer(r.id, { allow: true })).toBe(false);
      expect(store.get(r.id)?.state).toBe('expired');
    });

    it('rejects a wait on abort with ABORTED, and on an unknown id with NOT_FOUND', async () => {
      const { store } = open();
      const r = store.create(input());
      const controller = new AbortController();
      const waiting = store.wait(r.id, controller.signal);
      controller.abort(new Error('client went away'));
      await expect(waiting).rejects.toMatchObject({ code: 'ABORTED' });
      await expect(store.wait(r.id, AbortSignal.abort())).rejects.toMatchObject({ code: 'ABORTED' });
      await expect(store.wait('req_missing')).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect(store.get(r.id)?.state).toBe('pending');
    });

    it('records created, answered, expired and cancelled in the session event log', async () => {
      const { store, events } = open();
      const answered = store.create(input());
      store.answer(answered.id, { allow: true });
      const cancelled = store.create(input());
      store.cancel(cancelled.id);
      const expired = store.create(input(10));
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

    it('rejects waiters with SHUTTING_DOWN on close', async () => {
      const { store } = open();
      const r = store.create(input());
      const waiting = store.wait(r.id);
      store.close();
      await expect(waiting).rejects.toMatchObject({ code: 'SHUTTING_DOWN' });
    });

    describe('durability (implementations with storage)', () => {
      it('keeps pending requests across a restart: the new process can answer and wait', async (ctx) => {
        const { store, reopen } = open();
        if (reopen === undefined) return ctx.skip();
        const r = store.create(input());
        store.close();
        const next = reopen();
        expect(next.store.list('s1', 'pending').map((x) => x.id)).toEqual([r.id]);
        const waiting = next.store.wait(r.id);
        expect(next.store.answer(r.id, { allow: true })).toBe(true);
        await expect(waiting).resolves.toMatchObject({ state: 'answered', answer: { allow: true } });
      });

      it('reads requests that expired while no process ran as expired, and logs it', async (ctx) => {
        let now = Date.now();
        const { store, reopen } = open({ now: () => now });
        if (reopen === undefined) return ctx.skip();
        const r = store.create({ ...input(), expiresAt: now + 20 });
        store.close();
        now += 40; // while no process ran
        const next = reopen();
        expect(next.store.get(r.id)?.state).toBe('expired');
        expect(next.store.answer(r.id, { allow: true })).toBe(false);
        await next.events.flush();
        expect((await next.events.list('s1')).map((e) => e.type)).toContain('request.expired');
      });

      it('arms expiry for pending requests found at start', async (ctx) => {
        const { store, reopen } = open();
        if (reopen === undefined) return ctx.skip();
        const r = store.create(input(60));
        store.close();
        const next = reopen();
        const settled: HostRequest = await next.store.wait(r.id);
        expect(settled.state).toBe('expired');
      });

      it('wakes a waiter when another process answers', async (ctx) => {
        const { store, reopen } = open({ pollMs: 20 });
        if (reopen === undefined) return ctx.skip();
        const r = store.create(input());
        const waiting = store.wait(r.id);
        expect(reopen().store.answer(r.id, { allow: true })).toBe(true);
        await expect(waiting).resolves.toMatchObject({ state: 'answered', answer: { allow: true } });
      });

      it('lets exactly one of two processes answer the same request', async (ctx) => {
        const { store, reopen } = open();
        if (reopen === undefined) return ctx.skip();
        const r = store.create(input());
        const other = reopen().store;
        const results = [other.answer(r.id, 'from B'), store.answer(r.id, 'from A')];
        expect(results).toEqual([true, false]);
        expect(store.get(r.id)?.answer).toBe('from B');
      });
    });
  });
};
