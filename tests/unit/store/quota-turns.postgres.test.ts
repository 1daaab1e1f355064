// Quotas across replicas on PostgreSQL (host/store/pg/quota-turns.ts, host/api/quotas.ts): two
// stores on one database stand for two replicas, each with its own in-process turns. Creates
// admitted on both at once never pass the tenant's disk quota together; a tenant's turns of one
// scope never overlap across the two, and a work that fails lets go of its lock. A lock another
// replica holds past the bound (a hung create) answers STORE_BUSY, and the turn works once let go.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { toAgent } from '../../../host/agents/service/records.ts';
import { childWorkspaceQuota } from '../../../host/api/quotas.ts';
import { httpStatusOf, SandboxError } from '../../../host/errors.ts';
import { openPgStore } from '../../../host/store/pg/index.ts';
import type { Store } from '../../../host/store/store.ts';
import { createDatabase, describePostgres, type TestDatabase } from '../../helpers/postgres.ts';
import { until } from '../../helpers/until.ts';

const KEY = Buffer.alloc(32, 7);

describePostgres('quota turns on PostgreSQL', () => {
  let database: TestDatabase;
  const stores: Store[] = [];
  const open = async (quotaWaitMs?: number) => {
    const store = await openPgStore({
      url: database.url,
      secretsKey: KEY,
      eventBatchWindowMs: 0,
      quotaWaitMs,
    });
    stores.push(store);
    return store;
  };

  beforeEach(async () => {
    database = await createDatabase();
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close().catch(() => undefined);
    await database.drop();
  });

  it("creates admitted on two replicas at once never pass the tenant's disk quota", async () => {
    const [a, b] = [await open(), await open()];
    const tenantId = (await a.tenants.createTenant('acme')).id;
    await a.tenants.setQuotas(tenantId, { diskMb: 500 }); // five workspaces of 100 MiB
    const admitOn = (store: Store) => {
      const admit = childWorkspaceQuota(
        store.tenants,
        () => ({ list: async (t: string) => (await store.agents.list(t)).map(toAgent) }),
        100,
      );
      const make = () => store.agents.create({ tenantId, preset: 'default', mode: 'native', config: {} });
      return admit(tenantId, 100, make).then(
        () => 'made',
        (e: { code?: string }) => e.code,
      );
    };
    const outcomes = await Promise.all(Array.from({ length: 16 }, (_, i) => admitOn(i % 2 === 0 ? a : b)));
    expect(outcomes.filter((o) => o === 'made')).toHaveLength(5);
    expect(outcomes.filter((o) => o === 'LIMIT_EXCEEDED')).toHaveLength(11);
    expect(await b.agents.list(tenantId)).toHaveLength(5);
  });

  it("a tenant's turns never overlap across replicas; a failed one lets go of the lock", async () => {
    const [a, b] = [await open(), await open()];
    let inside = 0;
    let most = 0;
    const turn = (store: Store, scope: 'agents' | 'snapshots', fail = false) =>
      store.tenants.quotaTurn?.(scope, 'ten_1', async () => {
        most = Math.max(most, ++inside);
        // Real work between: a round trip to the database.
        await store.agents.list('ten_1');
        inside--;
        if (fail) throw new Error('refused');
      });
    const runs = Array.from({ length: 12 }, (_, i) => turn(i % 2 === 0 ? a : b, 'snapshots', i % 3 === 0));
    const settled = await Promise.allSettled(runs);
    expect(settled.filter((s) => s.status === 'rejected')).toHaveLength(4);
    expect(most).toBe(1);
    // Every lock was let go: a turn of each scope on each replica runs at once.
    for (const store of [a, b])
      for (const scope of ['agents', 'snapshots'] as const) await turn(store, scope);
  });

  it('a lock another replica holds past the bound answers STORE_BUSY, and works once let go', async () => {
    const [a, b] = [await open(), await open(300)];
    const tenantId = (await a.tenants.createTenant('acme')).id;
    await a.tenants.setQuotas(tenantId, { diskMb: 500 });
    // Replica a's create hangs inside its turn: it holds the tenant's lock of both scopes.
    let letGo = () => {};
    const hung = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    let held = 0;
    const holding = (['agents', 'snapshots'] as const).map((scope) =>
      a.tenants.quotaTurn?.(scope, tenantId, async () => {
        held++;
        await hung;
      }),
    );
    await until(() => held === 2);
    const admit = childWorkspaceQuota(
      b.tenants,
      () => ({ list: async (t: string) => (await b.agents.list(t)).map(toAgent) }),
      100,
    );
    let made = 0;
    const make = async () => {
      made++;
      return b.agents.create({ tenantId, preset: 'default', mode: 'native', config: {} });
    };
    // b's create and snapshot answer while a still holds the locks: a stable, retryable error.
    const create = await admit(tenantId, 100, make).catch((e: unknown) => e);
    const snapshot = await b.tenants
      .quotaTurn?.('snapshots', tenantId, async () => 'taken')
      .catch((e: unknown) => e);
    for (const refused of [create, snapshot]) {
      expect(refused).toBeInstanceOf(SandboxError);
      expect((refused as SandboxError).code).toBe('STORE_BUSY');
      expect(httpStatusOf((refused as SandboxError).code)).toBe(503);
      expect((refused as SandboxError).data?.retryAfterS).toBe(1);
    }
    expect(made).toBe(0);
    expect(held).toBe(2);
    letGo();
    await Promise.all(holding);
    await admit(tenantId, 100, make);
    expect(await b.tenants.quotaTurn?.('snapshots', tenantId, async () => 'taken')).toBe('taken');
    expect(await a.agents.list(tenantId)).toHaveLength(1);
  });
});
