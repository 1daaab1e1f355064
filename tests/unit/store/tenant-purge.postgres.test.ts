// The TenantPurgeStore contract against PostgreSQL (host/store/pg/tenant-purge.ts): a whole store
// on a fresh database of the run's private cluster per case.
import { openPgStore } from '../../../host/store/pg/index.ts';
import { createDatabase, describePostgres } from '../../helpers/postgres.ts';
import { runTenantPurgeContract } from './tenant-purge.contract.ts';

describePostgres('TenantPurgeStore (postgres)', () => {
  runTenantPurgeContract({
    name: 'postgres',
    async open() {
      const database = await createDatabase();
      const store = await openPgStore({
        url: database.url,
        secretsKey: Buffer.alloc(32, 7),
        eventBatchWindowMs: 0,
      });
      return {
        store,
        async close() {
          await store.close();
          await database.drop();
        },
      };
    },
  });
});
