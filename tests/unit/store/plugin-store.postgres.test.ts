// The PluginStore contract against PostgreSQL (host/store/pg/plugins.ts: the shared core over the
// Postgres backend) in the run's private cluster: a fresh database per case; `reopen` is another
// pool on it (a restarted or second replica) with the same options.
import { createPgPluginStore } from '../../../host/store/pg/plugins.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';
import { runPluginStoreContract } from './plugin-store.contract.ts';

describePostgres('PluginStore (postgres)', () =>
  runPluginStoreContract({
    name: 'postgres',
    async open(options) {
      const database = await createStoreDatabase();
      return {
        store: createPgPluginStore(database.open(), options),
        reopen: async () => createPgPluginStore(database.open(), options),
        close: () => database.drop(),
      };
    },
  }),
);
