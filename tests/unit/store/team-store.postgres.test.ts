// The TeamStore contract against PostgreSQL (host/store/pg/teams.ts) in the run's private cluster:
// a fresh database per case; `reopen` is another pool on it (a restarted or second replica).
import { createPgTeamStore } from '../../../host/store/pg/teams.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';
import { runTeamStoreContract } from './team-store.contract.ts';

describePostgres('TeamStore (postgres)', () =>
  runTeamStoreContract('postgres', async (now) => {
    const database = await createStoreDatabase();
    return {
      teams: createPgTeamStore(database.open(), now),
      reopen: async () => createPgTeamStore(database.open()),
      close: () => database.drop(),
    };
  }),
);
