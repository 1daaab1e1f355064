// The RequestStore contract against PostgreSQL (host/store/pg/requests.ts) in the run's private
// cluster: a fresh database per case; `reopen` is another pool on it (a restarted or second
// replica). request.* events go to an in-memory log: the log's own Postgres backend is another
// port's, and these cases read only what this store emitted.

import type { ClosableEventLog } from '../../../host/store/event-log-port.ts';
import { createMemoryEventLog } from '../../../host/store/memory.ts';
import { createPgRequestStore, insertPgRequest } from '../../../host/store/pg/requests.ts';
import type { ClosableRequestStore } from '../../../host/store/request-core.ts';
import { createStoreDatabase, describePostgres } from '../../helpers/postgres.ts';
import { runRequestStoreContract } from './request-store.contract.ts';
import type { OpenRequestStore } from './request-store.harness.ts';

const openPgRequestStore: OpenRequestStore = async (options = {}) => {
  const database = await createStoreDatabase();
  const opened: { store: ClosableRequestStore; events: ClosableEventLog }[] = [];
  const make = async () => {
    const events = createMemoryEventLog(options);
    const pair = { store: createPgRequestStore(database.open(), { ...options, events }), events };
    opened.push(pair);
    return pair;
  };
  const writer = database.open({ poolSize: 1 });
  return {
    ...(await make()),
    reopen: make,
    writeDraft: (request) => insertPgRequest(writer, request),
    async close() {
      for (const { store, events } of opened) {
        store.close();
        events.close();
      }
      await database.drop();
    },
  };
};

describePostgres('RequestStore (postgres)', () => runRequestStoreContract('postgres', openPgRequestStore));
