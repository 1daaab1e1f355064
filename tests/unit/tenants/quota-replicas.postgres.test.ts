// The replicas' view of a tenant's quotas on PostgreSQL: two stores (two pools) on one database
// (./quota-replicas.contract.ts says what is held).
import { randomBytes } from 'node:crypto';
import { openPgStore } from '../../../host/store/pg/index.ts';
import { createDatabase, describePostgres, type TestDatabase } from '../../helpers/postgres.ts';
import { runQuotaReplicasContract } from './quota-replicas.contract.ts';

describePostgres('tenant quotas across replicas on one PostgreSQL database', () => {
  let database: TestDatabase | undefined;
  const key = randomBytes(32);
  runQuotaReplicasContract(
    async () => {
      const db = await createDatabase();
      database = db;
      return (now) => openPgStore({ url: db.url, secretsKey: key, now, eventBatchWindowMs: 0 });
    },
    async () => {
      await database?.drop();
      database = undefined;
    },
  );
});
