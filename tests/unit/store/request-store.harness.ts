// The RequestStore implementations the contract suite (request-store.contract.ts) runs against,
// each opened by an async factory so a backend that needs a round trip to open (PostgreSQL) can
// join with one more file. `reopen` is an optional capability: a second instance on the same
// storage while the first stays open (a restarted or second process); memory has none, so the
// durability cases skip for it.
import type { HostRequest } from '../../../host/requests/port.ts';
import { createLibsqlEventLog } from '../../../host/store/event-log.ts';
import type { ClosableEventLog, EventLogOptions } from '../../../host/store/event-log-port.ts';
import { createMemoryEventLog, createMemoryRequestBackend } from '../../../host/store/memory.ts';
import { type ClosableRequestStore, createRequestStore } from '../../../host/store/request-core.ts';
import { createLibsqlRequestStore, prepareRequestInsert } from '../../../host/store/requests.ts';
import { tempDatabase } from './harness.ts';

export interface RequestStoreInstance {
  store: ClosableRequestStore;
  events: ClosableEventLog;
  reopen?: () => Promise<{ store: ClosableRequestStore; events: ClosableEventLog }>;
  /** Writes a drafted request as another store's transaction would (a schedule's fire). */
  writeDraft(request: HostRequest): Promise<void>;
  close(): Promise<void> | void;
}

export type RequestStoreOpenOptions = EventLogOptions & { pollMs?: number };

/** Opens a fresh, empty store (and the event log its request.* events go to). */
export type OpenRequestStore = (options?: RequestStoreOpenOptions) => Promise<RequestStoreInstance>;

export const openLibsqlRequestStore: OpenRequestStore = async (options = {}) => {
  const temp = tempDatabase();
  const opened: { store: ClosableRequestStore; events: ClosableEventLog }[] = [];
  const make = async () => {
    const db = temp.connect();
    const events = createLibsqlEventLog(db, options);
    const pair = { store: createLibsqlRequestStore(db, { ...options, events }), events };
    opened.push(pair);
    return pair;
  };
  const writer = prepareRequestInsert(temp.connect());
  return {
    ...(await make()),
    reopen: make,
    writeDraft: async (request) => writer(request),
    close() {
      for (const { store, events } of opened) {
        store.close();
        events.close();
      }
      temp.cleanup();
    },
  };
};

export const openMemoryRequestStore: OpenRequestStore = async (options = {}) => {
  const events = createMemoryEventLog(options);
  const backend = createMemoryRequestBackend();
  const store = createRequestStore(backend, { ...options, events });
  return {
    store,
    events,
    writeDraft: (request) => backend.insert(request),
    close() {
      store.close();
      events.close();
    },
  };
};
