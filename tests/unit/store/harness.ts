// Harnesses that let one contract suite run against every EventLog implementation (the
// AgentStore's are in agent-store.harness.ts, the RequestStore's in request-store.harness.ts).
// `reopen` is an optional capability (data, not a subclass): it opens a second instance on the same
// storage while the first stays open, i.e. what a restarted or second process would see. Memory
// implementations have no storage to reopen, so the durability tests skip for them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Database, openDatabase } from '../../../host/store/db.ts';
import { createLibsqlEventLog } from '../../../host/store/event-log.ts';
import type { ClosableEventLog, EventLogOptions } from '../../../host/store/event-log-port.ts';
import { createMemoryEventLog } from '../../../host/store/memory.ts';
import { migrate } from '../../../host/store/migrations.ts';

export interface EventLogInstance {
  log: ClosableEventLog;
  /** Another instance over the same storage (a restart / second process). */
  reopen?: () => ClosableEventLog;
  cleanup(): void;
}

export interface Harness<T> {
  name: string;
  open(options?: EventLogOptions & { pollMs?: number }): T;
}

/** A temp dir with a migrated database file; `connect()` opens another connection to it. */
/**
 * Runs `fn`, which opens today's event log, on a database migrated only part of the way (as older
 * code left it): the columns today's log reads and writes that later migrations add
 * (sessions.open_calls, version 16; sessions.first_seq and payloads.uses, the log retention migration) are there
 * while `fn` runs and gone after, so those migrations then find what older code wrote and count it.
 */
export async function asOlderCode<T>(db: Database, fn: () => Promise<T>): Promise<T> {
  // The log retention migration: where a session's kept log starts, and each payload's uses.
  const later = [
    ['sessions', 'open_calls'],
    ['sessions', 'first_seq'],
    ['payloads', 'uses'],
  ] as const;
  // Only what the database lacks: the version it was migrated to may have some of them already.
  const lacks = (table: string, column: string) => {
    const columns = (
      db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as { name: string }[]
    ).map((c) => c.name);
    return columns.length > 0 && !columns.includes(column);
  };
  const added = later.filter(([table, column]) => lacks(table, column));
  for (const [table, column] of added)
    db.exec(
      `ALTER TABLE ${table} ADD COLUMN ${column} INTEGER NOT NULL DEFAULT ${column === 'first_seq' ? 1 : 0}`,
    );
  try {
    return await fn();
  } finally {
    for (const [table, column] of added) db.exec(`ALTER TABLE ${table} DROP COLUMN ${column}`);
  }
}

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
