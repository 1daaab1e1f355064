// The TenantSettingsStore contract against PostgreSQL (host/store/pg/tenant-settings.ts) in the
// run's private cluster: a fresh database per case; `reopen` is another pool on it.
import { createPgTenantSettingsStore } from '../../../host/store/pg/tenant-settings.ts';
import { createPgTenantStore } from '../../../host/store/pg/tenants.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';
import { runTenantSettingsStoreContract } from './tenant-settings-store.contract.ts';

describePostgres('TenantSettingsStore (postgres)', () => {
  runTenantSettingsStoreContract({
    name: 'postgres',
    async open() {
      const database = await createStoreDatabase();
      const db = database.open();
      return {
        store: createPgTenantSettingsStore(db),
        tenant: async (name) => (await createPgTenantStore(db).createTenant(name)).id,
        reopen: async () => createPgTenantSettingsStore(database.open()),
        close: () => database.drop(),
      };
    },
  });
});
