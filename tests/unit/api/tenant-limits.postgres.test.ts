// A tenant's request concurrency across replicas (host/api/limits.ts with
// host/store/replica-share.ts over the replicas' heartbeats), on the run's private PostgreSQL
// cluster: two replicas are two stores (two pools) on one database. What a tenant's operator relies
// on: with N live replicas the tenant holds at most limit + N - 1 requests at once across them (each
// admits ceil(limit / N)); a replica that leaves gives its share back to the others once they count
// again; and the limit is a tenant's: another tenant has its own.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createTenantLimiter, type TenantLimiter } from '../../../host/api/limits.ts';
import { openPgStore } from '../../../host/store/pg/index.ts';
import { createReplicaShare, type ReplicaShare } from '../../../host/store/replica-share.ts';
import type { Store } from '../../../host/store/store.ts';
import { createDatabase, describePostgres, type TestDatabase } from '../../helpers/postgres.ts';

const KEY = Buffer.alloc(32, 7);

describePostgres('tenant request concurrency across replicas on one PostgreSQL database', () => {
  let database: TestDatabase;
  const stores: Store[] = [];

  const replica = async (id: string, limit: number) => {
    const store = await openPgStore({ url: database.url, secretsKey: KEY, eventBatchWindowMs: 0 });
    stores.push(store);
    await store.leases?.register({ id, url: `http://127.0.0.1:1/${id}` });
    // refreshMs 0: every use may count again, so a test needs no clock (the count is awaited below).
    const share = createReplicaShare({ limits: store.limits!, liveWithinMs: 60_000, refreshMs: 0 });
    return { id, store, share, limiter: createTenantLimiter(limit, share) };
  };

  beforeEach(async () => {
    database = await createDatabase();
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close().catch(() => undefined);
    await database.drop();
  });

  /** Slots `limiter` admits for `tenant` until it refuses. */
  const fill = (limiter: TenantLimiter, tenant: string): Array<() => void> => {
    const slots: Array<() => void> = [];
    for (let release = limiter.tryAcquire(tenant); release; release = limiter.tryAcquire(tenant))
      slots.push(release);
    return slots;
  };

  const counted = async (share: ReplicaShare, n: number) => {
    for (let i = 0; i < 100 && share.count() !== n; i++) await share.refresh();
    expect(share.count()).toBe(n);
  };

  it('holds the limit across both: a share each, at most limit + N - 1 together', async () => {
    const a = await replica('a', 4);
    const b = await replica('b', 4);
    await counted(a.share, 2);
    await counted(b.share, 2);
    expect(fill(a.limiter, 't1')).toHaveLength(2);
    expect(fill(b.limiter, 't1')).toHaveLength(2);
    // Another tenant's slots are its own.
    expect(fill(a.limiter, 't2')).toHaveLength(2);

    const odd = [await replica('c', 3), await replica('d', 3)];
    for (const r of odd) await counted(r.share, 4);
    // Four live replicas now (a, b, c, d): a limit of 3 is 1 each, 4 <= 3 + 4 - 1 together.
    expect(odd.map((r) => fill(r.limiter, 't3').length)).toEqual([1, 1]);
  });

  it('a replica that leaves gives its share back to the others when they count again', async () => {
    const a = await replica('a', 4);
    const b = await replica('b', 4);
    await counted(a.share, 2);
    const held = fill(a.limiter, 't1');
    expect(held).toHaveLength(2);
    await b.store.leases?.retire(b.id);
    await counted(a.share, 1);
    expect(fill(a.limiter, 't1')).toHaveLength(2);
    for (const release of held) release();
  });
});
