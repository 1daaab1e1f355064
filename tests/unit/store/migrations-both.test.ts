// One migration list, two backends: a fresh libsql database and a fresh PostgreSQL database
// (the run's private cluster) reach the same schema version and the same tables, columns, NOT NULLs
// and index names. What differs on purpose is named here and in host/store/pg/baseline.ts: SQLite's
// FTS5 table and its shadow tables against Postgres's `event_index.search` tsvector and its GIN
// index, and the `rowid` Postgres spells out where SQLite's is implicit.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Database } from '../../../host/store/db.ts';
import { openDatabase } from '../../../host/store/db.ts';
import { INSTANCE_ID, instanceIdOf } from '../../../host/store/instance.ts';
import {
  latestSchemaVersion,
  MIGRATIONS,
  type Migration,
  migrate,
  schemaVersion,
} from '../../../host/store/migrations.ts';
import { PG_BASELINE_VERSION } from '../../../host/store/pg/baseline.ts';
import { openPgDatabase, type PgDatabase } from '../../../host/store/pg/db.ts';
import { pgInstanceIdOf } from '../../../host/store/pg/instance.ts';
import { migratePg, pgSchemaVersion } from '../../../host/store/pg/migrate.ts';
import { indexText, ownerTokens } from '../../../host/store/search-text.ts';
import { createDatabase, describePostgres, type TestDatabase } from '../../helpers/postgres.ts';

interface Column {
  name: string;
  /** NOT NULL or part of the primary key. */
  required: boolean;
  /** integer, text or blob: the SQLite affinity, or what the Postgres type stands for. */
  kind: string;
}
type Schema = Record<string, Column[]>;

const SQLITE_FTS = /^events_fts(_|$)|^sqlite_/;
const PG_FTS_COLUMNS = new Set(['event_index.search']);
const PG_KIND: Record<string, string> = {
  bigint: 'integer',
  integer: 'integer',
  text: 'text',
  bytea: 'blob',
};

const sqliteSchema = (db: Database): Schema => {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as {
    name: string;
  }[];
  const schema: Schema = {};
  for (const { name } of tables) {
    if (SQLITE_FTS.test(name)) continue;
    const columns = db.prepare(`PRAGMA table_info(${name})`).all() as {
      name: string;
      type: string;
      notnull: number;
      pk: number;
    }[];
    schema[name] = columns.map((c) => ({
      name: c.name,
      required: c.notnull === 1 || c.pk > 0,
      kind: c.type.toLowerCase(),
    }));
  }
  return schema;
};

const pgSchema = async (db: PgDatabase): Promise<Schema> => {
  const rows = await db.many<{
    table_name: string;
    column_name: string;
    is_nullable: string;
    data_type: string;
  }>(
    `SELECT table_name, column_name, is_nullable, data_type FROM information_schema.columns
     WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
  );
  const schema: Schema = {};
  for (const r of rows) {
    // Postgres's spelled-out rowid (where SQLite's is implicit) and its full-text column.
    if (r.column_name === 'rowid' || PG_FTS_COLUMNS.has(`${r.table_name}.${r.column_name}`)) continue;
    schema[r.table_name] ??= [];
    schema[r.table_name]?.push({
      name: r.column_name,
      required: r.is_nullable === 'NO',
      kind: PG_KIND[r.data_type] ?? r.data_type,
    });
  }
  return schema;
};

const sqliteIndexes = (db: Database): string[] =>
  (
    db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
      .all() as { name: string }[]
  ).map((r) => r.name);

const pgIndexes = async (db: PgDatabase): Promise<string[]> =>
  (
    await db.many<{ indexname: string }>(
      `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()
       AND indexname NOT LIKE '%\\_pkey' AND indexname <> 'event_index_search' ORDER BY indexname`,
    )
  ).map((r) => r.indexname);

/** The log retention migration's version (found by name: a merge may renumber it). */
const RETENTION_VERSION = MIGRATIONS.find((m) => m.name.startsWith('log retention'))!.version;

describePostgres('one migration list for libsql and PostgreSQL', () => {
  const databases: TestDatabase[] = [];
  const pools: PgDatabase[] = [];
  let libsql: Database;
  const freshPg = async (): Promise<PgDatabase> => {
    const database = await createDatabase();
    databases.push(database);
    const db = openPgDatabase({ url: database.url, poolSize: 2 });
    pools.push(db);
    return db;
  };

  beforeAll(() => {
    libsql = openDatabase({ path: ':memory:' });
    migrate(libsql);
  });
  afterAll(async () => {
    libsql.close();
    for (const db of pools) await db.close();
    for (const database of databases) await database.drop();
  });

  it('reaches the same version, with the same versions recorded', async () => {
    const db = await freshPg();
    expect(await pgSchemaVersion(db)).toBe(0);
    expect(await migratePg(db)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(await pgSchemaVersion(db)).toBe(schemaVersion(libsql));
    expect(await pgSchemaVersion(db)).toBe(latestSchemaVersion());
    const recorded = async () =>
      (
        await db.many<{ version: number; name: string }>(
          'SELECT version, name FROM schema_migrations ORDER BY 1',
        )
      ).map((r) => [r.version, r.name]);
    expect(await recorded()).toEqual(
      (
        libsql.prepare('SELECT version, name FROM schema_migrations ORDER BY 1').all() as {
          version: number;
          name: string;
        }[]
      ).map((r) => [r.version, r.name]),
    );
    expect(await migratePg(db)).toEqual([]);
  });

  it('makes the same tables, columns (in order), NOT NULLs, kinds and index names', async () => {
    const db = await freshPg();
    await migratePg(db);
    const sqlite = sqliteSchema(libsql);
    const postgres = await pgSchema(db);
    expect(Object.keys(postgres).sort()).toEqual(Object.keys(sqlite).sort());
    for (const table of Object.keys(sqlite))
      expect({ table, columns: postgres[table] }).toEqual({ table, columns: sqlite[table] });
    expect(await pgIndexes(db)).toEqual(sqliteIndexes(libsql));
  });

  it('keeps the full-text differences to the ones named: a tsvector with a GIN index, rowid identities', async () => {
    const db = await freshPg();
    await migratePg(db);
    expect(await db.one(`SELECT indexdef FROM pg_indexes WHERE indexname = 'event_index_search'`)).toEqual({
      indexdef: expect.stringMatching(/USING gin \(search\)/),
    });
    const rowids = await db.many<{ table_name: string }>(
      `SELECT table_name FROM information_schema.columns
       WHERE table_schema = current_schema() AND column_name = 'rowid' AND is_identity = 'YES' ORDER BY 1`,
    );
    expect(rowids.map((r) => r.table_name)).toEqual([
      'agents',
      'api_keys',
      'plugin_packages',
      'plugins',
      'requests',
      'schedules',
      'tenants',
    ]);
  });

  it("serves a tenant-bound phrase search from event_index.search through its GIN index, as the baseline's header says", async () => {
    const db = await freshPg();
    await migratePg(db);
    const add = (tenant: string, session: string, seq: number, data: object) =>
      db.query(
        `INSERT INTO event_index (tenant_id, session_id, seq, type, surface, at, search) VALUES ($1, $2, $3, 'tool.call', 'api', 1,
           setweight(to_tsvector('simple', $4), 'A') || setweight(to_tsvector('simple', $5), 'D'))`,
        [tenant, session, seq, ownerTokens(tenant, session), indexText('tool.call', JSON.stringify(data))],
      );
    await add('ten_a', 'agt_1', 1, { command: 'deploy the blue whale' });
    await add('ten_a', 'agt_2', 1, { command: 'whale blue' });
    await add('ten_b', 'agt_3', 1, { command: 'deploy the blue whale' });
    const owner = (tenant: string) => `t${Buffer.from(tenant).toString('hex')}:A`;
    const search = `SELECT session_id FROM event_index
      WHERE search @@ (to_tsquery('simple', $1) && phraseto_tsquery('simple', $2)) AND tenant_id = $3 ORDER BY id DESC`;
    expect(await db.many(search, [owner('ten_a'), 'Blue Whale', 'ten_a'])).toEqual([{ session_id: 'agt_1' }]);
    expect(await db.many(search, [owner('ten_b'), 'blue whale', 'ten_b'])).toEqual([{ session_id: 'agt_3' }]);
    // The tsquery alone binds the tenant: a body that spells another tenant's owner token (weight D)
    // does not make its event that tenant's (weight A).
    await add('ten_a', 'agt_4', 1, { note: `${owner('ten_b').slice(0, -2)} deploy` });
    const tokensOnly = `SELECT session_id FROM event_index
      WHERE search @@ (to_tsquery('simple', $1) && phraseto_tsquery('simple', $2)) ORDER BY id`;
    expect(await db.many(tokensOnly, [owner('ten_b'), 'deploy'])).toEqual([{ session_id: 'agt_3' }]);
    const plan = await db.tx(async (tx) => {
      await tx.query('SET LOCAL enable_seqscan = off');
      return tx.many<{ 'QUERY PLAN': string }>(`EXPLAIN ${search}`, [owner('ten_a'), 'whale', 'ten_a']);
    });
    expect(plan.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/Bitmap Index Scan on event_index_search/);
  });

  it('makes an instance id once, as on libsql', async () => {
    const db = await freshPg();
    await migratePg(db);
    const id = await pgInstanceIdOf(db);
    expect(id).toMatch(INSTANCE_ID);
    expect(id).not.toBe(instanceIdOf(libsql));
    await migratePg(db);
    expect(await pgInstanceIdOf(db)).toBe(id);
  });

  it('applies once when two replicas migrate the same fresh database at once', async () => {
    const first = await freshPg();
    const second = openPgDatabase({ url: databases.at(-1)?.url as string, poolSize: 1 });
    pools.push(second);
    const results = await Promise.all([migratePg(first), migratePg(second)]);
    expect(results.map((r) => r.length).sort((a, b) => a - b)).toEqual([0, MIGRATIONS.length]);
    expect(await first.one('SELECT count(*) AS n FROM meta')).toEqual({ n: 1 });
  });

  it('refuses a database written by newer code, with the error libsql gives', async () => {
    const db = await freshPg();
    const future: Migration = {
      version: 99,
      name: 'future',
      sql: 'SELECT 1',
      pg: { sql: 'CREATE TABLE future (x int)' },
    };
    await migratePg(db, [...MIGRATIONS, future]);
    const onPg = await migratePg(db).catch((e: unknown) => e);
    const sqlite = openDatabase({ path: ':memory:' });
    migrate(sqlite, [...MIGRATIONS, future]);
    let onLibsql: unknown;
    try {
      migrate(sqlite);
    } catch (error) {
      onLibsql = error;
    } finally {
      sqlite.close();
    }
    expect(onPg).toMatchObject({ code: 'CONFIG_INVALID', data: { schemaVersion: 99 } });
    expect((onPg as Error).message).toBe((onLibsql as Error).message);
  });

  it('rolls every pending step back when one fails, naming the migration', async () => {
    const db = await freshPg();
    const next = latestSchemaVersion() + 1;
    const broken: Migration = {
      version: next,
      name: 'broken',
      sql: 'SELECT 1',
      pg: { sql: 'CREATE TABLE ok2 (x int); SELECT * FROM nope;' },
    };
    await expect(migratePg(db, [...MIGRATIONS, broken])).rejects.toMatchObject({
      code: 'STORE_FAILED',
      message: expect.stringMatching(new RegExp(`migration ${next} \\(broken\\)`)),
      data: { pgCode: '42P01' },
    });
    expect(await pgSchemaVersion(db)).toBe(0);
    expect(await db.one("SELECT to_regclass('tenants')::text AS t")).toEqual({ t: null });
  });

  it("runs a later migration's pg step and its data change after the baseline", async () => {
    const db = await freshPg();
    await migratePg(db);
    const next: Migration = {
      version: latestSchemaVersion() + 1,
      name: 'later',
      sql: 'CREATE TABLE later (x INTEGER)',
      pg: {
        sql: 'CREATE TABLE later (x bigint)',
        up: async (tx) => {
          await tx.query('INSERT INTO later (x) VALUES ($1)', [7]);
        },
      },
    };
    expect(await migratePg(db, [...MIGRATIONS, next])).toEqual([next.version]);
    expect(await db.many('SELECT x FROM later')).toEqual([{ x: 7 }]);
  });

  it('refuses a list where a migration after the baseline has no pg step, before touching anything', async () => {
    const db = await freshPg();
    const sqliteOnly: Migration = {
      version: latestSchemaVersion() + 1,
      name: 'sqlite only',
      sql: 'SELECT 1',
    };
    await expect(migratePg(db, [...MIGRATIONS, sqliteOnly])).rejects.toMatchObject({
      code: 'STORE_FAILED',
      data: { versions: [sqliteOnly.version] },
    });
    expect(await pgSchemaVersion(db)).toBe(0);
  });

  it('counts the open calls of a log written before version 16 (calls minus results per session)', async () => {
    const before = MIGRATIONS.filter((m) => m.version < 16);
    const rows: [string, number, string][] = [
      ['a', 1, 'tool.call'],
      ['a', 2, 'tool.result'],
      ['a', 3, 'tool.call'],
      ['a', 4, 'message.user'],
      ['b', 1, 'tool.call'],
      ['b', 2, 'tool.result'],
    ];
    const sqlite = openDatabase({ path: ':memory:' });
    migrate(sqlite, before);
    const session = sqlite.prepare('INSERT INTO sessions (id, created_at, last_seq) VALUES (?, 1, 0)');
    const event = sqlite.prepare(
      "INSERT INTO events (session_id, seq, type, surface, call_id, data, at) VALUES (?, ?, ?, 'current', 'c', '{}', 1)",
    );
    for (const id of ['a', 'b', 'c']) session.run(id);
    for (const row of rows) event.run(...row);
    migrate(sqlite);
    const counted = sqlite.prepare('SELECT id, open_calls FROM sessions ORDER BY id').all();
    sqlite.close();
    const db = await freshPg();
    await migratePg(db, before);
    for (const id of ['a', 'b', 'c'])
      await db.query('INSERT INTO sessions (id, created_at, last_seq) VALUES ($1, 1, 0)', [id]);
    for (const row of rows)
      await db.query(
        "INSERT INTO events (session_id, seq, type, surface, call_id, data, at) VALUES ($1, $2, $3, 'current', 'c', '{}', 1)",
        row,
      );
    await migratePg(db);
    const expected = [
      { id: 'a', open_calls: 1 },
      { id: 'b', open_calls: 0 },
      { id: 'c', open_calls: 0 },
    ];
    expect(counted).toEqual(expected);
    expect(await db.many('SELECT id, open_calls FROM sessions ORDER BY id')).toEqual(expected);
  });

  it('counts the uses of each payload of a log written before the log retention migration (once per event naming it, dropped refs not)', async () => {
    const before = MIGRATIONS.filter((m) => m.version < RETENTION_VERSION);
    const ref = (pointer: string, sha256: string, dropped = false) => ({
      pointer,
      sha256,
      bytes: 5,
      ...(dropped ? { dropped } : {}),
    });
    const events: [string, number, string][] = [
      ['agt_1', 1, JSON.stringify([ref('/a', 'p')])],
      ['agt_1', 2, JSON.stringify([ref('/a', 'p'), ref('/b', 'p'), ref('/c', 'q')])],
      ['agt_1', 3, JSON.stringify([ref('/a', 'r', true)])],
      ['agt_2', 1, JSON.stringify([ref('/a', 'p')])],
    ];
    const payloads = [
      ['tn_a', 'p'],
      ['tn_a', 'q'],
      ['tn_a', 'r'],
      ['tn_b', 'p'],
    ];
    const setup = [
      "INSERT INTO tenants (id, name, created_at) VALUES ('tn_a', 'a', 1), ('tn_b', 'b', 1)",
      `INSERT INTO agents (id, tenant_id, preset, mode, config, created_at)
       VALUES ('agt_1', 'tn_a', 'standard', 'direct', '{}', 1), ('agt_2', 'tn_b', 'standard', 'direct', '{}', 1)`,
      "INSERT INTO sessions (id, created_at, last_seq) VALUES ('agt_1', 1, 3), ('agt_2', 1, 1)",
    ];
    const eventSql = (n: (i: number) => string) =>
      `INSERT INTO events (session_id, seq, type, surface, data, refs, at) VALUES (${n(1)}, ${n(2)}, 'message.user', 'current', '{}', ${n(3)}, 1)`;
    const payloadSql = (n: (i: number) => string) =>
      `INSERT INTO payloads (tenant_id, sha256, bytes, data, created_at) VALUES (${n(1)}, ${n(2)}, 5, '"x"', 1)`;
    const query = 'SELECT tenant_id, sha256, uses FROM payloads ORDER BY tenant_id, sha256';
    const sqlite = openDatabase({ path: ':memory:' });
    migrate(sqlite, before);
    for (const sql of setup) sqlite.exec(sql);
    for (const row of events) sqlite.prepare(eventSql(() => '?')).run(...row);
    for (const row of payloads) sqlite.prepare(payloadSql(() => '?')).run(...row);
    migrate(sqlite);
    const counted = sqlite.prepare(query).all();
    sqlite.close();
    const db = await freshPg();
    await migratePg(db, before);
    for (const sql of setup) await db.query(sql);
    for (const row of events)
      await db.query(
        eventSql((i) => `$${i}`),
        row,
      );
    for (const row of payloads)
      await db.query(
        payloadSql((i) => `$${i}`),
        row,
      );
    await migratePg(db);
    const expected = [
      { tenant_id: 'tn_a', sha256: 'p', uses: 2 },
      { tenant_id: 'tn_a', sha256: 'q', uses: 1 },
      { tenant_id: 'tn_a', sha256: 'r', uses: 0 },
      { tenant_id: 'tn_b', sha256: 'p', uses: 1 },
    ];
    expect(counted).toEqual(expected);
    expect((await db.many(query)).map((r) => ({ ...r, uses: Number(r.uses) }))).toEqual(expected);
  });

  it('has its baseline at the latest version of the list it was written for, and nothing before it', () => {
    const withPg = MIGRATIONS.filter((m) => m.pg !== undefined).map((m) => m.version);
    expect(withPg[0]).toBe(PG_BASELINE_VERSION);
    expect(withPg).toEqual(MIGRATIONS.map((m) => m.version).filter((v) => v >= PG_BASELINE_VERSION));
  });
});
