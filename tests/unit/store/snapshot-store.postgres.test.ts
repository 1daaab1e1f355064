// The SnapshotStore contract against PostgreSQL (host/store/pg/snapshots.ts) in the run's private
// cluster: a fresh database per case; `reopen` is another pool on it.
import { createPgSnapshotStore } from '../../../host/store/pg/snapshots.ts';
import { createPgTenantStore } from '../../../host/store/pg/tenants.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';
import { runSnapshotStoreContract } from './snapshot-store.contract.ts';

describePostgres('SnapshotStore (postgres)', () => {
  runSnapshotStoreContract({
    name: 'postgres',
    async open() {
      const database = await createStoreDatabase();
      const db = database.open();
      return {
        store: createPgSnapshotStore(db),
        tenant: async (name) => (await createPgTenantStore(db).createTenant(name)).id,
        reopen: async () => createPgSnapshotStore(database.open()),
        close: () => database.drop(),
      };
    },
  });
});
