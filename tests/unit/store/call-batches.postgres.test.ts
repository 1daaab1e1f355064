// The Postgres CallBatchStore (host/store/pg/call-batches.ts) against the run's private cluster:
// the same contract as libsql and memory; `reopen` is a second pool on the same database (another
// replica racing on the same keys).
import { createPgCallBatchStore } from '../../../host/store/pg/call-batches.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';
import { runCallBatchContract } from './call-batches.contract.ts';

describePostgres('CallBatchStore on PostgreSQL', () => {
  runCallBatchContract('postgres', async () => {
    const database = await createStoreDatabase();
    let at = 1_000_000;
    const now = () => at;
    const db = database.open();
    return {
      store: createPgCallBatchStore(db, now),
      reopen: async () => createPgCallBatchStore(database.open({ poolSize: 4 }), now),
      advance: (ms) => {
        at += ms;
      },
      close: () => database.drop(),
    };
  });
});
