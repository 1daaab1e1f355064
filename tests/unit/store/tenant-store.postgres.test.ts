// The Postgres TenantStore (host/store/pg/tenants.ts) against the run's private cluster, through
// the same harness shape and the same cases as the TenantStore contract (tenants.test.ts's cases;
// tenant-store.contract.ts once the async port lands: then this file's cases give way to
// `runTenantStoreContract(harness)`), plus the raw-key check read from the database's rows.
import { afterEach, expect, it } from 'vitest';
import type { PgDatabase } from '../../../host/store/pg/db.ts';
import { type AsyncTenantStore, createPgTenantStore } from '../../../host/store/pg/tenants.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';

interface Instance {
  store: AsyncTenantStore;
  /** Another store on the same database, open beside this one (another replica or the CLI). */
  second(): Promise<AsyncTenantStore>;
  /** Closes this store and opens it again on the same database (a restart). */
  reopen(): Promise<AsyncTenantStore>;
  /** The database's own pool, for reading rows as they are stored. */
  db(): PgDatabase;
  close(): Promise<void>;
}

const harness = {
  name: 'postgres',
  async open(options: { now?: () => number } = {}): Promise<Instance> {
    const database = await createStoreDatabase();
    let db = database.open();
    return {
      store: createPgTenantStore(db, options.now),
      second: async () => createPgTenantStore(database.open()),
      async reopen() {
        await db.close();
        db = database.open();
        return createPgTenantStore(db, options.now);
      },
      db: () => db,
      close: () => database.drop(),
    };
  },
};

describePostgres(`TenantStore (${harness.name})`, () => {
  let instance: Instance | undefined;
  const open = async (options?: { now?: () => number }) => {
    instance = await harness.open(options);
    return instance;
  };
  afterEach(async () => {
    await instance?.close();
    instance = undefined;
  });

  it('creates a tenant with a dsk_ key that verifies to that tenant', async () => {
    const { store: tenants } = await open();
    const acme = await tenants.createTenant('acme');
    expect(acme.apiKey).toMatch(/^dsk_[A-Za-z0-9_-]{32,}$/);
    expect(acme.id).toMatch(/^ten_/);
    expect(await tenants.verifyKey(acme.apiKey)).toEqual({
      id: acme.id,
      name: 'acme',
      createdAt: acme.createdAt,
    });
    expect((await tenants.getTenant(acme.id))?.name).toBe('acme');
    expect(await tenants.getTenant('ten_missing')).toBeUndefined();
    expect((await tenants.listTenants()).map((t) => t.name)).toEqual(['acme']);
  });

  it('never stores the raw key: the rows hold only its hash and a short prefix', async () => {
    const opened = await open();
    const { apiKey } = await opened.store.createTenant('acme');
    const rows = await opened
      .db()
      .many<{ row: string }>(
        'SELECT row_to_json(k)::text AS row FROM api_keys k UNION ALL SELECT row_to_json(t)::text FROM tenants t',
      );
    const text = rows.map((r) => r.row).join('\n');
    expect(text.includes(apiKey)).toBe(false);
    expect(text.includes(apiKey.slice(12))).toBe(false);
    expect(text.includes(apiKey.slice(0, 12))).toBe(true); // the lookup prefix: proves we read the rows
  });

  it('rejects unknown, tampered, malformed and revoked keys', async () => {
    const { store: tenants } = await open();
    const acme = await tenants.createTenant('acme');
    const last = acme.apiKey.at(-1) === 'A' ? 'B' : 'A';
    expect(await tenants.verifyKey(acme.apiKey.slice(0, -1) + last)).toBeUndefined();
    expect(await tenants.verifyKey(`dsk_${'x'.repeat(40)}`)).toBeUndefined();
    expect(await tenants.verifyKey('Bearer nonsense')).toBeUndefined();
    expect(await tenants.verifyKey('')).toBeUndefined();
    expect(await tenants.revokeKey(acme.keyId)).toBe(true);
    expect(await tenants.revokeKey(acme.keyId)).toBe(false);
    expect(await tenants.verifyKey(acme.apiKey)).toBeUndefined();
  });

  it('stops a revoked key at once, even one verified a moment before', async () => {
    const { store: tenants } = await open();
    const acme = await tenants.createTenant('acme');
    expect((await tenants.verifyKey(acme.apiKey))?.id).toBe(acme.id);
    expect((await tenants.verifyKey(acme.apiKey))?.id).toBe(acme.id); // remembered now
    await tenants.revokeKey(acme.keyId);
    expect(await tenants.verifyKey(acme.apiKey)).toBeUndefined();
  });

  it('stops a key another process revoked within the 2 s it trusts a verified key', async () => {
    let clock = 1_000_000;
    const opened = await open({ now: () => clock });
    const acme = await opened.store.createTenant('acme');
    expect((await opened.store.verifyKey(acme.apiKey))?.id).toBe(acme.id);
    const other = await opened.second(); // the CLI or another replica on this database
    expect(await other.revokeKey(acme.keyId)).toBe(true);
    clock += 1_000;
    expect((await opened.store.verifyKey(acme.apiKey))?.id).toBe(acme.id); // still trusted: the bound
    clock += 1_001;
    expect(await opened.store.verifyKey(acme.apiKey)).toBeUndefined();
  });

  it('rotates: a second key works, revoking the first leaves the second working', async () => {
    const { store: tenants } = await open();
    const acme = await tenants.createTenant('acme');
    const second = await tenants.createKey(acme.id);
    expect((await tenants.verifyKey(second.apiKey))?.id).toBe(acme.id);
    await tenants.revokeKey(acme.keyId);
    expect((await tenants.verifyKey(second.apiKey))?.id).toBe(acme.id);
    expect((await tenants.listKeys(acme.id)).map((k) => [k.id, k.revokedAt !== undefined])).toEqual([
      [acme.keyId, true],
      [second.keyId, false],
    ]);
    await expect(tenants.createKey('ten_missing')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('keeps tenants and keys across a restart', async () => {
    const opened = await open();
    const acme = await opened.store.createTenant('acme');
    const restarted = await opened.reopen();
    expect((await restarted.verifyKey(acme.apiKey))?.id).toBe(acme.id);
    expect((await restarted.listTenants()).map((t) => t.id)).toEqual([acme.id]);
  });

  it('maps each key to its own tenant, and lists tenants oldest first', async () => {
    const { store: tenants } = await open({ now: () => 5 });
    const a = await tenants.createTenant('a');
    const b = await tenants.createTenant('b');
    expect((await tenants.verifyKey(a.apiKey))?.id).toBe(a.id);
    expect((await tenants.verifyKey(b.apiKey))?.id).toBe(b.id);
    expect((await tenants.listTenants()).map((t) => t.name)).toEqual(['a', 'b']);
    await expect(tenants.createTenant('  ')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });
});
