// The limits' central side on PostgreSQL (host/store/pg/limits.ts): egress bytes leased per tenant
// and hour window, and the live replicas. What the shared budgets rely on: the leases of one window
// never add up past the limit, however many pools race for them; the last lease gets what is left
// and later ones nothing; windows and tenants are separate; a replica counts as live while its
// heartbeat is recent and stops counting when it retires.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openPgStore } from '../../../host/store/pg/index.ts';
import type { Store } from '../../../host/store/store.ts';
import { createDatabase, describePostgres, type TestDatabase } from '../../helpers/postgres.ts';

const KEY = Buffer.alloc(32, 7);

describePostgres('LimitStore on PostgreSQL', () => {
  let database: TestDatabase;
  const stores: Store[] = [];
  const open = async () => {
    const store = await openPgStore({ url: database.url, secretsKey: KEY, eventBatchWindowMs: 0 });
    stores.push(store);
    return store.limits!;
  };

  beforeEach(async () => {
    database = await createDatabase();
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close().catch(() => undefined);
    await database.drop();
  });

  it('grants what is asked while it fits, then what is left, then nothing', async () => {
    const limits = await open();
    expect(await limits.leaseEgressBytes('t1', 100, 400, 1_000)).toBe(400);
    expect(await limits.leaseEgressBytes('t1', 100, 400, 1_000)).toBe(400);
    expect(await limits.leaseEgressBytes('t1', 100, 400, 1_000)).toBe(200);
    expect(await limits.leaseEgressBytes('t1', 100, 400, 1_000)).toBe(0);
    // Another window, another tenant: their own.
    expect(await limits.leaseEgressBytes('t1', 101, 400, 1_000)).toBe(400);
    expect(await limits.leaseEgressBytes('t2', 100, 400, 1_000)).toBe(400);
    // A limit raised later admits the difference.
    expect(await limits.leaseEgressBytes('t1', 100, 400, 1_200)).toBe(200);
  });

  it('two pools racing for one window never lease past the limit together', async () => {
    const [a, b] = [await open(), await open()];
    const grants = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).leaseEgressBytes('t1', 7, 300, 10_000)),
    );
    expect(grants.reduce((x, y) => x + y, 0)).toBe(10_000);
    expect(grants.every((g) => g >= 0 && g <= 300)).toBe(true);
  });

  it('counts the replicas whose heartbeat is recent, and not one that retired', async () => {
    const limits = await open();
    const leases = stores[0]?.leases;
    expect(await limits.liveReplicas(60_000)).toBe(1); // none registered: the caller itself
    await leases?.register({ id: 'a', url: 'http://127.0.0.1:1/a' });
    await leases?.register({ id: 'b', url: 'http://127.0.0.1:1/b' });
    expect(await limits.liveReplicas(60_000)).toBe(2);
    await leases?.retire('b');
    expect(await limits.liveReplicas(60_000)).toBe(1);
  });
});
