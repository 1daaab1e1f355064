// The Postgres SessionStateStore (host/store/pg/session-state.ts) against the run's private
// cluster: the same contract as libsql and memory (session-state.contract.ts); `reopen` is a second
// pool on the same database (a restart, or another replica).
import { createPgSessionStateStore } from '../../../host/store/pg/session-state.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';
import { runSessionStateContract } from './session-state.contract.ts';

describePostgres('SessionStateStore on PostgreSQL', () => {
  runSessionStateContract('postgres', async () => {
    const database = await createStoreDatabase();
    return {
      store: createPgSessionStateStore(database.open()),
      reopen: async () => createPgSessionStateStore(database.open()),
      close: () => database.drop(),
    };
  });
});
