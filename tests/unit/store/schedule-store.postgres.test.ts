// The ScheduleStore contract against PostgreSQL (host/store/pg/schedules.ts) in the run's private
// cluster: a fresh database per case; `reopen` is another pool on it (a second replica); the
// requests a fire writes are read back through the Postgres RequestBackend.
import { createPgRequestBackend } from '../../../host/store/pg/requests.ts';
import { createPgScheduleStore } from '../../../host/store/pg/schedules.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';
import { runScheduleStoreContract } from './schedule-store.contract.ts';

describePostgres('ScheduleStore (postgres)', () =>
  runScheduleStoreContract('postgres', async () => {
    const database = await createStoreDatabase();
    const requests = createPgRequestBackend(database.open({ poolSize: 1 }));
    return {
      schedules: createPgScheduleStore(database.open()),
      requestOf: (id) => requests.get(id),
      reopen: async () => createPgScheduleStore(database.open()),
      close: () => database.drop(),
    };
  }),
);
