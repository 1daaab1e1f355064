// The TenantStore contract against PostgreSQL (host/store/pg/tenants.ts) in the run's private
// cluster: a fresh database per case; `second` is another pool on it (another replica or the CLI),
// `reopen` closes this store's pool and opens a new one (a restart). Plus one Postgres-only case:
// the raw key is nowhere in the rows, read as the database stores them.
import { afterEach, expect, it } from 'vitest';
import { createPgTenantStore } from '../../../host/store/pg/tenants.ts';
import { createStoreDatabase, describePostgres, type StoreDatabase } from '../../helpers/postgres.ts';
import { runTenantStoreContract } from './tenant-store.contract.ts';

describePostgres('TenantStore (postgres)', () => {
  runTenantStoreContract({
    name: 'postgres',
    async open(options = {}) {
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
        close: () => database.drop(),
      };
    },
  });

  let database: StoreDatabase | undefined;
  afterEach(async () => {
    await database?.drop();
    database = undefined;
  });

  it('never stores the raw key: the rows hold only its hash and a short prefix', async () => {
    database = await createStoreDatabase();
    const db = database.open();
    const { apiKey } = await createPgTenantStore(db).createTenant('acme');
    const rows = await db.many<{ row: string }>(
      'SELECT row_to_json(k)::text AS row FROM api_keys k UNION ALL SELECT row_to_json(t)::text FROM tenants t',
    );
    const text = rows.map((r) => r.row).join('\n');
    expect(text.includes(apiKey)).toBe(false);
    expect(text.includes(apiKey.slice(12))).toBe(false);
    expect(text.includes(apiKey.slice(0, 12))).toBe(true); // the lookup prefix: proves we read the rows
  });
});
