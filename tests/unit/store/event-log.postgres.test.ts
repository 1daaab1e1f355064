// The EventLog contracts (seqs, paging, subscribers, durability; payloads and budgets) against
// PostgreSQL (host/store/pg/event-log.ts) in the run's private cluster: a fresh database per case;
// `reopen` opens another log on another pool on it while the first stays open (a restarted or
// second replica). Plus two replicas on one database appending at once, the same appends counted
// alike on libsql and Postgres, a row with many new payloads indexed within a tsvector's limit, and
// a COMMIT whose answer is lost stored once.
import { afterEach, expect, it } from 'vitest';
import { createLibsqlEventLog } from '../../../host/store/event-log.ts';
import type { ClosableEventLog, EventLogOptions } from '../../../host/store/event-log-port.ts';
import type { PgDatabase } from '../../../host/store/pg/db.ts';
import { createPgEventLog } from '../../../host/store/pg/event-log.ts';
import { createPgEventSearch } from '../../../host/store/pg/event-search.ts';
import type { SessionEventInput } from '../../../host/store/types.ts';
import { createStoreDatabase, describePostgres, type StoreDatabase } from '../../helpers/postgres.ts';
import { runEventLogContract } from './event-log.contract.ts';
import { runEventBudgetContract } from './event-log-budget.contract.ts';
import { runUnfinishedCallsContract } from './event-log-calls.contract.ts';
import type { EventLogFactory } from './event-log-factory.ts';
import { tempDatabase } from './harness.ts';

const postgresEventLogFactory: EventLogFactory = {
  name: 'postgres',
  async open(options: EventLogOptions = {}) {
    const database = await createStoreDatabase();
    const logs: ClosableEventLog[] = [];
    const make = () => {
      const log = createPgEventLog(database.open(), options);
      logs.push(log);
      return log;
    };
    return {
      log: make(),
      reopen: async () => make(),
      async cleanup() {
        await Promise.allSettled(logs.map((log) => log.close()));
        await database.drop();
      },
    };
  },
};

describePostgres('EventLog (postgres)', () => {
  runEventLogContract(postgresEventLogFactory);
  runEventBudgetContract(postgresEventLogFactory);
  runUnfinishedCallsContract(postgresEventLogFactory);

  let database: StoreDatabase | undefined;
  afterEach(async () => {
    await database?.drop();
    database = undefined;
  });

  const ev = (sessionId: string, type: string, data = 0) => ({
    sessionId,
    type,
    surface: 'current' as const,
    data,
  });

  it('two replicas on one database: their own sessions at once, then one session after a restart', async () => {
    database = await createStoreDatabase();
    const a = createPgEventLog(database.open(), { tenantOf: () => 't' });
    const b = createPgEventLog(database.open(), { tenantOf: () => 't' });
    // Appends of both in the same ticks: each one's batches in flight while the other's commit.
    for (let i = 1; i <= 100; i++) {
      void a.append([ev('a', 'x', i), ev('shared-later', 'from.a', i)]);
      void b.append([ev('b', 'x', i)]);
      if (i % 10 === 0) await Promise.all([a.flush(), b.flush()]);
    }
    await Promise.all([a.flush(), b.flush()]);
    const usage = async (log: ClosableEventLog) => (await log.usage()).find((u) => u.tenantId === 't')?.bytes;
    const reader = createPgEventLog(database.open(), { tenantOf: () => 't' });
    expect((await reader.list('a', { limit: 5000 })).map((e) => [e.seq, e.data])).toEqual(
      Array.from({ length: 100 }, (_, i) => [i + 1, i + 1]),
    );
    expect((await reader.list('b', { limit: 5000 })).map((e) => e.seq)).toEqual(
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    // Both counted into one usage row, nothing lost between them.
    const stored = await usage(reader);
    expect(stored).toBeGreaterThan(0);
    // Replica a restarts; b appends to a's session after it, then a (restarted) again.
    await a.close();
    await b.append([ev('shared-later', 'from.b')]);
    await b.flush();
    const a2 = createPgEventLog(database.open(), { tenantOf: () => 't' });
    const [next] = await a2.append([ev('shared-later', 'from.a2')]);
    expect(next!.seq).toBe(102);
    await a2.flush();
    const shared = await reader.list('shared-later', { limit: 5000 });
    expect(shared.map((e) => e.seq)).toEqual(Array.from({ length: 102 }, (_, i) => i + 1));
    expect(shared.slice(-2).map((e) => e.type)).toEqual(['from.b', 'from.a2']);
    await Promise.all([a2.close(), b.close(), reader.close()]);
  });

  it('two replicas appending to one session at once store every event, seqs gap-free', async () => {
    database = await createStoreDatabase();
    const a = createPgEventLog(database.open(), { tenantOf: () => 't' });
    const b = createPgEventLog(database.open(), { tenantOf: () => 't' });
    // Both believe they give seqs 1..100: each write that finds the other's seqs stored renumbers.
    for (let i = 1; i <= 100; i++) {
      void a.append([ev('s', 'from.a', i)]);
      void b.append([ev('s', 'from.b', i)]);
      if (i % 10 === 0) await Promise.all([a.flush(), b.flush()]);
    }
    await Promise.all([a.flush(), b.flush()]);
    const reader = createPgEventLog(database.open());
    const stored = await reader.list('s', { limit: 5000 });
    expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    // Each replica's events in its own order; none lost or stored twice.
    for (const type of ['from.a', 'from.b'])
      expect(stored.filter((e) => e.type === type).map((e) => e.data)).toEqual(
        Array.from({ length: 100 }, (_, i) => i + 1),
      );
    const [row] = await database
      .open()
      .many<{ last_seq: number }>("SELECT last_seq FROM sessions WHERE id = 's'");
    expect(row?.last_seq).toBe(200);
    await Promise.all([a.close(), b.close(), reader.close()]);
  });

  /** Tool calls with large values, some repeated, over two tenants (what the budget counts). */
  const workload = (): SessionEventInput[][] =>
    Array.from({ length: 30 }, (_, i): SessionEventInput[] => {
      const sessionId = `${i % 2 === 0 ? 'a' : 'b'}:1`;
      return [
        {
          sessionId,
          type: 'tool.call',
          surface: 'log-only',
          callId: `c${i}`,
          ...(i % 3 === 0 ? { parentCallId: 'run' } : {}),
          data: { name: 'write', arguments: { content: `${i % 4}`.repeat(20_000), note: `call ${i}` } },
        },
        {
          sessionId,
          type: 'tool.result',
          surface: 'current',
          callId: `c${i}`,
          data: { ok: true, text: `done ${i} ü` },
        },
      ];
    });

  it('counts the same appends as libsql does: usage bytes, events and payloads alike', async () => {
    database = await createStoreDatabase();
    const options = { tenantOf: (s: string) => s.split(':')[0]!, inlineBytes: 4096, now: () => 1000 };
    const pgLog = createPgEventLog(database.open(), options);
    const temp = tempDatabase();
    const libsqlLog = createLibsqlEventLog(temp.connect(), options);
    try {
      for (const batch of workload()) {
        void pgLog.append(batch);
        void libsqlLog.append(batch);
      }
      await Promise.all([pgLog.flush(), libsqlLog.flush()]);
      const reader = createPgEventLog(database.open(), options);
      const sorted = (u: { tenantId: string; bytes: number }[]) =>
        u
          .map(({ tenantId, bytes }) => ({ tenantId, bytes }))
          .sort((x, y) => (x.tenantId < y.tenantId ? -1 : 1));
      expect(sorted(await reader.usage())).toEqual(sorted(await libsqlLog.usage()));
      for (const session of ['a:1', 'b:1'])
        for (const payloads of ['inline', 'refs'] as const)
          expect(await reader.list(session, { payloads })).toEqual(
            await libsqlLog.list(session, { payloads }),
          );
      await reader.close();
    } finally {
      await Promise.all([pgLog.close(), libsqlLog.close()]);
      temp.cleanup();
    }
  });

  it('writes a batch larger than one statement (2,500 events in one append) as libsql does', async () => {
    database = await createStoreDatabase();
    const options = { tenantOf: (s: string) => s.split(':')[0]!, now: () => 1000 };
    const pgLog = createPgEventLog(database.open(), options);
    const temp = tempDatabase();
    const libsqlLog = createLibsqlEventLog(temp.connect(), options);
    const batch = Array.from({ length: 2500 }, (_, i) =>
      ev(['a:1', 'a:2', 'b:1'][i % 3] as string, i % 2 === 0 ? 'tool.call' : 'tool.result', i),
    );
    try {
      const [pgEvents, libsqlEvents] = await Promise.all([pgLog.append(batch), libsqlLog.append(batch)]);
      expect(pgEvents.map((e) => e.seq)).toEqual(libsqlEvents.map((e) => e.seq));
      await Promise.all([pgLog.flush(), libsqlLog.flush()]);
      const reader = createPgEventLog(database.open(), options);
      for (const session of ['a:1', 'a:2', 'b:1']) {
        const stored = await reader.list(session, { limit: 5000 });
        expect(stored).toEqual(await libsqlLog.list(session, { limit: 5000 }));
        expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: stored.length }, (_, i) => i + 1));
      }
      const sorted = (u: { tenantId: string; bytes: number }[]) =>
        u
          .map(({ tenantId, bytes }) => ({ tenantId, bytes }))
          .sort((x, y) => (x.tenantId < y.tenantId ? -1 : 1));
      expect(sorted(await reader.usage())).toEqual(sorted(await libsqlLog.usage()));
      // The next append of a session goes on after the batch, on a restarted log too.
      const [next] = await reader.append([ev('a:1', 'tool.call', 9)]);
      expect(next?.seq).toBe(835);
      await reader.close();
    } finally {
      await Promise.all([pgLog.close(), libsqlLog.close()]);
      temp.cleanup();
    }
  });

  it('indexes a row that stores many new payloads at once within what a tsvector holds', async () => {
    database = await createStoreDatabase();
    const db = database.open();
    await db.query("INSERT INTO tenants (id, name, created_at) VALUES ('t', 't', 0)");
    await db.query(
      "INSERT INTO agents (id, tenant_id, preset, mode, config, created_at) VALUES ('s', 't', 'p', 'native', '{}', 0)",
    );
    const log = createPgEventLog(db);
    // 40 values of distinct words, each stored apart: far more text than one tsvector may hold.
    const words = (i: number) => Array.from({ length: 4000 }, (_, j) => `w${i}x${j}`).join(' ');
    const data = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`v${i}`, words(i)]));
    await log.append([{ sessionId: 's', type: 'tool.call', surface: 'log-only', data }]);
    await log.append([{ sessionId: 's', type: 'tool.result', surface: 'log-only', data: 'after' }]);
    await log.flush();
    expect((await log.list('s')).map((e) => e.seq)).toEqual([1, 2]);
    const search = createPgEventSearch(db);
    const hits = async (query: string) =>
      (await search.search({ tenantId: 't', query, limit: 5 })).map((h) => h.seq);
    expect(await hits('w0x1')).toEqual([1]); // the first payloads are indexed
    expect(await hits('after')).toEqual([2]);
    await log.close();
  });

  it('stores a batch once when its COMMIT answer is lost, and retries one that did not commit', async () => {
    database = await createStoreDatabase();
    const real = database.open();
    let lose: 'after commit' | 'before commit' | undefined;
    const db: PgDatabase = {
      ...real,
      async tx(fn) {
        const when = lose;
        lose = undefined;
        const result = await real.tx(async (q) => {
          const value = await fn(q);
          if (when === 'before commit') throw new Error('connection lost before COMMIT');
          return value;
        });
        if (when === 'after commit') throw new Error('connection lost during COMMIT');
        return result;
      },
    };
    const errors: unknown[] = [];
    const log = createPgEventLog(db, { tenantOf: () => 't', onError: (e) => errors.push(e) });
    lose = 'after commit';
    await log.append([ev('s', 'one'), ev('s', 'two')]);
    await log.flush();
    expect(errors).toEqual([]); // the server said it committed: a success
    lose = 'before commit';
    await log.append([ev('s', 'three')]);
    await expect(log.flush()).rejects.toThrow('connection lost before COMMIT');
    await log.flush(); // retried
    const reader = createPgEventLog(database.open());
    expect((await reader.list('s')).map((e) => [e.seq, e.type])).toEqual([
      [1, 'one'],
      [2, 'two'],
      [3, 'three'],
    ]);
    await Promise.all([log.close(), reader.close()]);
  });
});
