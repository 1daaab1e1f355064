// Harnesses that let one contract suite run against every EventLog / RequestStore / AgentStore
// implementation.
// `reopen` is an optional capability (data, not a subclass): it opens a second instance on the same
// storage while the first stays open, i.e. what a restarted or second process would see. Memory
// implementations have no storage to reopen, so the durability tests skip for them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nanoid } from 'nanoid';
import { type AgentStore, createAgentStore } from '../../../host/store/agents.ts';
import { type Database, openDatabase } from '../../../host/store/db.ts';
import { createLibsqlEventLog } from '../../../host/store/event-log.ts';
import type { ClosableEventLog, EventLogOptions } from '../../../host/store/event-log-port.ts';
import { createMemoryEventLog, createMemoryRequestStore } from '../../../host/store/memory.ts';
import { createMemoryAgentStore } from '../../../host/store/memory-agents.ts';
import { migrate } from '../../../host/store/migrations.ts';
import type { ClosableRequestStore } from '../../../host/store/request-core.ts';
import { createLibsqlRequestStore } from '../../../host/store/requests.ts';

export interface EventLogInstance {
  log: ClosableEventLog;
  /** Another instance over the same storage (a restart / second process). */
  reopen?: () => ClosableEventLog;
  cleanup(): void;
}

export interface RequestStoreInstance {
  store: ClosableRequestStore;
  events: ClosableEventLog;
  reopen?: () => { store: ClosableRequestStore; events: ClosableEventLog };
  cleanup(): void;
}

export interface AgentStoreInstance {
  agents: AgentStore;
  /** Makes a tenant agents can belong to; returns its id. */
  tenant(name: string): string;
  reopen?: () => AgentStore;
  cleanup(): void;
}

export interface Harness<T> {
  name: string;
  open(options?: EventLogOptions & { pollMs?: number }): T;
}

/** A temp dir with a migrated database file; `connect()` opens another connection to it. */
export const tempDatabase = () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-store-'));
  const path = join(dir, 'store.db');
  const connections: Database[] = [];
  const connect = () => {
    const db = openDatabase({ path });
    migrate(db);
    connections.push(db);
    return db;
  };
  const cleanup = () => {
    for (const db of connections) if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { dir, path, connect, cleanup };
};

/** The libsql log writing on its caller's connection, or (`thread`) on a writer thread of its own. */
const libsqlLogHarness = (thread: boolean): Harness<EventLogInstance> => ({
  name: thread ? 'libsql, writer thread' : 'libsql',
  open(options = {}) {
    const temp = tempDatabase();
    const logs: ClosableEventLog[] = [];
    const make = () => {
      const log = createLibsqlEventLog(
        temp.connect(),
        thread ? { ...options, writerPath: temp.path } : options,
      );
      logs.push(log);
      return log;
    };
    return {
      log: make(),
      reopen: make,
      cleanup() {
        for (const log of logs) log.close();
        temp.cleanup();
      },
    };
  },
});

export const libsqlEventLogHarness = libsqlLogHarness(false);
export const libsqlThreadEventLogHarness = libsqlLogHarness(true);

export const memoryEventLogHarness: Harness<EventLogInstance> = {
  name: 'memory',
  open(options = {}) {
    const log = createMemoryEventLog(options);
    return { log, cleanup: () => log.close() };
  },
};

export const libsqlRequestStoreHarness: Harness<RequestStoreInstance> = {
  name: 'libsql',
  open(options = {}) {
    const temp = tempDatabase();
    const opened: { store: ClosableRequestStore; events: ClosableEventLog }[] = [];
    const make = () => {
      const db = temp.connect();
      const events = createLibsqlEventLog(db, options);
      const pair = { store: createLibsqlRequestStore(db, { ...options, events }), events };
      opened.push(pair);
      return pair;
    };
    return {
      ...make(),
      reopen: make,
      cleanup() {
        for (const { store, events } of opened) {
          store.close();
          events.close();
        }
        temp.cleanup();
      },
    };
  },
};

export const memoryRequestStoreHarness: Harness<RequestStoreInstance> = {
  name: 'memory',
  open(options = {}) {
    const events = createMemoryEventLog(options);
    const store = createMemoryRequestStore({ ...options, events });
    const cleanup = () => {
      store.close();
      events.close();
    };
    return { store, events, cleanup };
  },
};

export const libsqlAgentStoreHarness: Harness<AgentStoreInstance> = {
  name: 'libsql',
  open(options = {}) {
    const temp = tempDatabase();
    const db = temp.connect();
    return {
      agents: createAgentStore(db, options.now),
      // A bare tenant row for the agents' foreign key: the TenantStore's methods are async, and
      // this capability stays synchronous for the AgentStore contract.
      tenant(name) {
        const id = `ten_${name}_${nanoid(6)}`;
        db.prepare('INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)').run(id, name, Date.now());
        return id;
      },
      reopen: () => createAgentStore(temp.connect(), options.now),
      cleanup: temp.cleanup,
    };
  },
};

export const memoryAgentStoreHarness: Harness<AgentStoreInstance> = {
  name: 'memory',
  open(options = {}) {
    const tenants = new Set<string>();
    const agents = createMemoryAgentStore({
      ...(options.now ? { now: options.now } : {}),
      tenantExists: (id) => tenants.has(id),
    });
    return {
      agents,
      tenant(name) {
        tenants.add(`ten_${name}`);
        return `ten_${name}`;
      },
      cleanup: () => {},
    };
  },
};
