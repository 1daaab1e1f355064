// How the EventLog contract suites open an instance: an async factory, so that a backend that
// starts asynchronously (a PostgreSQL database) runs the same suites as a third one-line file.
// `reopen` opens a second instance on the same storage while the first stays open (a restarted or
// second process); implementations without storage leave it out and the durability tests skip.
import { createEventLog } from '../../../host/store/event-log-core.ts';
import type { ClosableEventLog, EventBackend, EventLogOptions } from '../../../host/store/event-log-port.ts';
import { createMemoryEventBackend } from '../../../host/store/memory.ts';
import type { EventLogInstance, Harness } from './harness.ts';

export interface EventLogContractInstance {
  log: ClosableEventLog;
  reopen?: () => Promise<ClosableEventLog>;
  cleanup(): Promise<void> | void;
}

export interface EventLogFactory {
  name: string;
  open(options?: EventLogOptions): Promise<EventLogContractInstance>;
}

/** A factory over one of the synchronous harnesses of harness.ts (libsql, memory). */
export const eventLogFactory = (harness: Harness<EventLogInstance>): EventLogFactory => ({
  name: harness.name,
  async open(options) {
    const instance = await harness.open(options);
    const { reopen } = instance;
    return {
      log: instance.log,
      ...(reopen === undefined ? {} : { reopen: async () => reopen() }),
      cleanup: () => instance.cleanup(),
    };
  },
});

/**
 * The core over a backend that answers every call on a later tick (the memory backend behind
 * promises): what a network database is to the core. A write renumbers rows another instance got
 * to first, as the libsql backend does, so a reopened instance is a second process.
 */
export const asyncEventLogFactory: EventLogFactory = {
  name: 'asynchronous backend',
  async open(options = {}) {
    const inner = createMemoryEventBackend();
    const inFlight = new Set<Promise<unknown>>();
    const later = <T>(answer: () => T): Promise<T> => {
      const promise = new Promise((resolve) => setImmediate(resolve)).then(answer);
      inFlight.add(promise);
      const done = () => inFlight.delete(promise);
      promise.then(done, done);
      return promise;
    };
    const backend: EventBackend = {
      lastSeq: (sessionId) => later(() => inner.lastSeq(sessionId)),
      tenantOf: (sessionId) => later(() => inner.tenantOf(sessionId)),
      usage: (tenantId) => later(() => inner.usage(tenantId)),
      usageAll: () => later(() => inner.usageAll()),
      readBlob: (tenantId, sha256) => later(() => inner.readBlob(tenantId, sha256)),
      hasBlob: (tenantId, sha256) => later(() => inner.hasBlob(tenantId, sha256)),
      read: (sessionId, afterSeq, limit) => later(() => inner.read(sessionId, afterSeq, limit)),
      callRows: (sessionIds) => later(() => inner.callRows(sessionIds)),
      write: (rows) =>
        later(() => {
          const last = new Map<string, number>();
          for (const row of rows) {
            const before = last.get(row.sessionId) ?? inner.lastSeq(row.sessionId);
            if (row.seq <= before) row.seq = before + 1;
            last.set(row.sessionId, row.seq);
          }
          inner.write(rows);
        }),
    };
    const logs: ClosableEventLog[] = [];
    const make = () => {
      const log = createEventLog(backend, options);
      logs.push(log);
      return log;
    };
    /** Until every instance's appends are written and no call to the backend is pending. */
    const idle = async () => {
      await Promise.allSettled(logs.map((log) => log.flush()));
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    };
    return {
      log: make(),
      reopen: async () => {
        await idle();
        return make();
      },
      async cleanup() {
        await Promise.allSettled(logs.map((log) => log.close()));
        await idle();
      },
    };
  },
};
