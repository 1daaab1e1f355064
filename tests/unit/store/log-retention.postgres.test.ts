// The LogRetentionStore contract against PostgreSQL (host/store/pg/log-retention.ts): a whole
// store on a fresh database of the run's private cluster per case.
import { openPgStore } from '../../../host/store/pg/index.ts';
import { createDatabase, describePostgres } from '../../helpers/postgres.ts';
import { runLogRetentionContract } from './log-retention.contract.ts';

describePostgres('LogRetentionStore (postgres)', () => {
  runLogRetentionContract({
    name: 'postgres',
    async open(now) {
      const database = await createDatabase();
      const store = await openPgStore({
        url: database.url,
        secretsKey: Buffer.alloc(32, 7),
        eventBatchWindowMs: 0,
        now,
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
