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
      const db = database.open();
      return {
        store: createPgNodeStore(db),
        async addAgent(id, tenant, deleted = false) {
          await db.query(
            'INSERT INTO tenants (id, name, created_at) VALUES ($1, $1, 0) ON CONFLICT (id) DO NOTHING',
            [tenant],
          );
          await db.query(
            `INSERT INTO agents (id, tenant_id, preset, mode, config, created_at, deleted_at) VALUES ($1, $2, 'p', 'm', '{}', 0, $3)`,
            [id, tenant, deleted ? 1 : null],
          );
        },
        reopen: async () => createPgNodeStore(database.open()),
        close: () => database.drop(),
      };
    },
  });
});
