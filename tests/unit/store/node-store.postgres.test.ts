// The NodeStore contract against PostgreSQL (host/store/pg/nodes.ts) in the run's private
// cluster: a fresh database per case; `reopen` is another pool on it (another replica).
import { createPgNodeStore } from '../../../host/store/pg/nodes.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';
import { runNodeStoreContract } from './node-store.contract.ts';

describePostgres('NodeStore (postgres)', () => {
  runNodeStoreContract({
    name: 'postgres',
    async open() {
      const database = await createStoreDatabase();
      return {
        store: createPgNodeStore(database.open()),
        reopen: async () => createPgNodeStore(database.open()),
        close: () => database.drop(),
      };
    },
  });
});
