// The CallBatchStore contract: every implementation runs this suite through a one-line test file
// (libsql, memory, postgres). Its cases are what host/api/idempotency.ts relies on: a claim is
// first-writer-wins (also between two stores on one database: two replicas), a batch settles
// once and only by its claimer, a release frees the key, an expired key is claimed afresh, and
// the claim keeps where the session's log stood.
import { describe, expect, it } from 'vitest';
import { CALL_BATCH_TTL_MS, type CallBatchStore } from '../../../host/store/call-batches-port.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface CallBatchInstance {
  store: CallBatchStore;
  /** Another store on the same storage (another replica); absent where nothing is shared. */
  reopen?: () => Promise<CallBatchStore>;
  /** Moves the stores' clock on. */
  advance(ms: number): void;
  close(): Promise<void> | void;
}

const key = { tenantId: 'ten_a', agentId: 'agt_1', key: 'k-1' };
const claimOf = (bootId: string, bodyHash = 'h1', afterSeq = 0) => ({ ...key, afterSeq, bodyHash, bootId });
const outcome = { status: 200, body: '{"results":[]}' };

export const runCallBatchContract = (name: string, open: () => Promise<CallBatchInstance>) => {
  describe(`CallBatchStore contract (${name})`, () => {
    const start = closedAfterEach(open);

    it('claims a new key once; a second claim reads the running row', async () => {
      const { store } = await start();
      expect(await store.claim(claimOf('boot-a'))).toEqual({ kind: 'claimed', afterSeq: 0 });
      const held = await store.claim(claimOf('boot-b', 'h2'));
      expect(held).toMatchObject({
        kind: 'held',
        batch: { state: 'running', bodyHash: 'h1', startedBy: 'boot-a', afterSeq: 0 },
      });
      expect(await store.get(key)).toMatchObject({ state: 'running', startedBy: 'boot-a' });
    });

    it('scopes a key to its tenant and agent', async () => {
      const { store } = await start();
      await store.claim(claimOf('boot-a'));
      expect((await store.claim({ ...claimOf('boot-a'), agentId: 'agt_2' })).kind).toBe('claimed');
      expect((await store.claim({ ...claimOf('boot-a'), tenantId: 'ten_b' })).kind).toBe('claimed');
      expect(await store.get({ ...key, key: 'other' })).toBeUndefined();
    });

    it('settles a batch once, only by its claimer, and keeps what the client got', async () => {
      const { store } = await start();
      await store.claim(claimOf('boot-a'));
      expect(await store.settle(key, 'boot-b', outcome)).toBe(false);
      expect(await store.settle(key, 'boot-a', outcome)).toBe(true);
      expect(await store.settle(key, 'boot-a', { status: 500, body: '{}' })).toBe(false);
      expect(await store.claim(claimOf('boot-c'))).toEqual({
        kind: 'held',
        batch: expect.objectContaining({ state: 'done', outcome, startedBy: 'boot-a' }),
      });
    });

    it('a release by the claimer frees the key; by anyone else, or once done, it changes nothing', async () => {
      const { store } = await start();
      await store.claim(claimOf('boot-a'));
      await store.release(key, 'boot-b');
      expect(await store.get(key)).toMatchObject({ state: 'running' });
      await store.release(key, 'boot-a');
      expect(await store.get(key)).toBeUndefined();
      expect((await store.claim(claimOf('boot-b'))).kind).toBe('claimed');
      await store.settle(key, 'boot-b', outcome);
      await store.release(key, 'boot-b');
      expect(await store.get(key)).toMatchObject({ state: 'done' });
    });

    it('forgets a key after its time to live: a claim takes it over', async () => {
      const instance = await start();
      const { store } = instance;
      await store.claim(claimOf('boot-a'));
      await store.settle(key, 'boot-a', outcome);
      instance.advance(CALL_BATCH_TTL_MS - 1);
      expect(await store.get(key)).toMatchObject({ state: 'done' });
      instance.advance(1);
      expect(await store.get(key)).toBeUndefined();
      expect(await store.claim(claimOf('boot-b', 'h2'))).toEqual({ kind: 'claimed', afterSeq: 0 });
      expect(await store.get(key)).toMatchObject({ state: 'running', startedBy: 'boot-b', bodyHash: 'h2' });
      // The expired run of boot-a cannot settle the new one.
      expect(await store.settle(key, 'boot-a', outcome)).toBe(false);
    });

    it('keeps where the log stood at the claim', async () => {
      const { store } = await start();
      expect(await store.claim(claimOf('boot-a', 'h1', 7))).toEqual({ kind: 'claimed', afterSeq: 7 });
      expect(await store.claim(claimOf('boot-b', 'h1', 9))).toMatchObject({
        kind: 'held',
        batch: { afterSeq: 7 },
      });
      expect(await store.get(key)).toMatchObject({ afterSeq: 7 });
    });

    it('of many claims racing on one key, from two stores on one database, exactly one wins', async (ctx) => {
      const { store, reopen } = await start();
      if (reopen === undefined) return ctx.skip();
      const other = await reopen();
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? store : other).claim(claimOf(`boot-${i}`))),
      );
      expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1);
      const winner = (await store.get(key))?.startedBy;
      for (const r of results)
        if (r.kind === 'held') expect(r.batch).toMatchObject({ state: 'running', startedBy: winner });
    });
  });
};
