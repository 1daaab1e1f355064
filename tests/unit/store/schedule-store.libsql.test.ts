import { createLibsqlRequestBackend } from '../../../host/store/requests.ts';
import { createScheduleStore } from '../../../host/store/schedules.ts';
import { tempDatabase } from './harness.ts';
import { runScheduleStoreContract } from './schedule-store.contract.ts';

runScheduleStoreContract('libsql', async () => {
  const db = tempDatabase();
  const requests = createLibsqlRequestBackend(db.connect());
  return {
    schedules: createScheduleStore(db.connect()),
    requestOf: (id) => requests.get(id),
    reopen: async () => createScheduleStore(db.connect()),
    close: db.cleanup,
  };
});
