// The SkillStore contract against PostgreSQL (host/store/pg/skills.ts) in the run's private
// cluster: a fresh database per case; `reopen` is another pool on it (a restarted or second
// replica); tenants are made through the Postgres TenantStore.
import { createPgSkillStore } from '../../../host/store/pg/skills.ts';
import { createPgTenantStore } from '../../../host/store/pg/tenants.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';
import { runSkillStoreContract } from './skill-store.contract.ts';

describePostgres('SkillStore (postgres)', () =>
  runSkillStoreContract({
    name: 'postgres',
    async open(options = {}) {
      const database = await createStoreDatabase();
      const db = database.open();
      return {
        store: createPgSkillStore(db, options.now),
        tenant: async (name) => (await createPgTenantStore(db).createTenant(name)).id,
        reopen: async () => createPgSkillStore(database.open(), options.now),
        close: () => database.drop(),
      };
    },
  }),
);
