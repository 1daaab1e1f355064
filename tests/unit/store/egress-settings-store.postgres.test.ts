// The EgressSettingsStore contract against PostgreSQL (host/store/pg/egress.ts) in the run's
// private cluster, sealed as the service runs it: a fresh database per case; `reopen` is another
// pool on it (a restarted or second replica) with the same secrets key. Plus one Postgres-only
// case: no credential and no CA key is in the rows as the database stores them.
import { randomBytes } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import { createPgEgressSettingsStore } from '../../../host/store/pg/egress.ts';
import { createPgTenantStore } from '../../../host/store/pg/tenants.ts';
import { createSealer } from '../../../host/store/sealed.ts';
import { createStoreDatabase, describePostgres, type StoreDatabase } from '../../helpers/postgres.ts';
import { runEgressSettingsStoreContract } from './egress-settings-store.contract.ts';

describePostgres('EgressSettingsStore (postgres)', () => {
  runEgressSettingsStoreContract({
    name: 'postgres, sealed',
    async open() {
      const database = await createStoreDatabase();
      const db = database.open();
      const sealer = createSealer(randomBytes(32));
      return {
        store: createPgEgressSettingsStore(db, Date.now, sealer),
        tenant: async (name) => (await createPgTenantStore(db).createTenant(name)).id,
        reopen: async () => createPgEgressSettingsStore(database.open(), Date.now, sealer),
        close: () => database.drop(),
      };
    },
  });

  let database: StoreDatabase | undefined;
  afterEach(async () => {
    await database?.drop();
    database = undefined;
  });

  it('stores the document and the CA sealed: no secret in the rows', async () => {
    database = await createStoreDatabase();
    const db = database.open();
    const store = createPgEgressSettingsStore(db, Date.now, createSealer(randomBytes(32)));
    const { id } = await createPgTenantStore(db).createTenant('a');
    const secret = 'TOPSECRET-pg-egress-91ad';
    await store.put(id, { credentials: [{ name: 'gh', host: 'example.com', value: secret }] });
    await store.putCaOnce(id, { certPem: 'CERT', keyPem: `KEY ${secret}` });
    const rows = await db.many<{ row: string }>(
      `SELECT row_to_json(e)::text AS row FROM tenant_egress e
       UNION ALL SELECT row_to_json(c)::text FROM tenant_egress_ca c`,
    );
    expect(rows).toHaveLength(2);
    for (const { row } of rows) {
      expect(row).toContain('sealed:v1:');
      expect(row).not.toContain(secret);
    }
  });
});
