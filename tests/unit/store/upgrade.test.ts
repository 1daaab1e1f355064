// Upgrades: a store made by the previous release (the schema of every migration but the newest,
// holding live data: tenants and keys, agents, their logs, sealed secrets) opened by this build
// migrates in place and serves it. The old store is generated, not checked in: the migration list
// minus its newest version, then the rows a store of today's code holds, column by column as far
// as the old schema has them (the expand-then-contract rule, docs/operations.md "Upgrades", is what
// makes that copy a faithful old store: a release only adds, so an old row is a new row without
// the new columns). libsql through the API; PostgreSQL through the store's ports.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { openDatabase } from '../../../host/store/db.ts';
import { latestSchemaVersion, MIGRATIONS, migrate, schemaVersion } from '../../../host/store/migrations.ts';
import { openPgDatabase, type PgQueries } from '../../../host/store/pg/db.ts';
import { openPgStore } from '../../../host/store/pg/index.ts';
import { migratePg, pgSchemaVersion } from '../../../host/store/pg/migrate.ts';
import type { Store } from '../../../host/store/store.ts';
import { createDatabase, describePostgres } from '../../helpers/postgres.ts';
import { type Loose, makeApi } from '../api/harness.ts';

const LATEST = latestSchemaVersion();
const PREVIOUS = MIGRATIONS.filter((m) => m.version < LATEST);
const root = mkdtempSync(join(tmpdir(), 'dsh-upgrade-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SECRET = { credentials: [{ host: 'api.example.com', headers: { authorization: 'Bearer kept' } }] };

/** The SQLite tables a copy fills: real tables, not the FTS index (rebuilt by nothing: empty is valid). */
const copiedTables = (db: ReturnType<typeof openDatabase>, schema: string): string[] =>
  (
    db
      .prepare(
        `SELECT name FROM ${schema}.sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'
         AND name NOT LIKE 'events_fts%' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'`,
      )
      .all() as { name: string }[]
  ).map((r) => r.name);

const columnsOf = (db: ReturnType<typeof openDatabase>, schema: string, table: string): string[] =>
  (db.prepare(`SELECT name FROM pragma_table_info(?, ?)`).all(table, schema) as { name: string }[]).map(
    (r) => r.name,
  );

it('opens a libsql store of the previous release holding live agents, migrates it and serves it', async () => {
  // Today's code makes the data.
  const made = join(root, 'made.db');
  const now = await makeApi({}, { store: { path: made } });
  const agent = await now.createAgent(now.keyA);
  await now.call(now.keyA, agent.id, [
    { id: 'w', name: 'write', arguments: { file_path: 'kept.md', content: 'from the old release\n' } },
  ]);
  await now.store.egress.put(now.tenantA, SECRET);
  const { keyA, keyB, tenantA } = now;
  await now.close();

  // The previous release's store: its schema, those rows, the same secrets key.
  const dir = join(root, 'old');
  const old = openDatabase({ path: join(dir, 'store.db') });
  migrate(old, PREVIOUS);
  expect(schemaVersion(old)).toBe(LATEST - 1);
  old.exec(`ATTACH DATABASE '${made}' AS made`);
  old.pragma('foreign_keys = OFF');
  for (const table of copiedTables(old, 'main')) {
    const have = new Set(columnsOf(old, 'made', table));
    const columns = columnsOf(old, 'main', table).filter((c) => have.has(c));
    old.exec(`DELETE FROM main.${table}`);
    old.exec(`INSERT INTO main.${table} (${columns}) SELECT ${columns} FROM made.${table}`);
  }
  old.exec('DETACH DATABASE made');
  old.close();
  rmSync(join(dir, 'store.db.key'), { force: true });
  copyFileSync(`${made}.key`, join(dir, 'store.db.key'));

  // This build opens it: migrated, and everything there as it was.
  const upgraded = await makeApi({}, { store: { path: join(dir, 'store.db') } });
  try {
    expect(schemaVersion((upgraded.store as Loose).db)).toBe(LATEST);
    expect((await upgraded.request(keyA, 'GET', `/v1/agents/${agent.id}`)).status).toBe(200);
    expect((await upgraded.request(keyB, 'GET', `/v1/agents/${agent.id}`)).status).toBe(404);
    const events = (await upgraded.request(keyA, 'GET', `/v1/agents/${agent.id}/events`)).json.events;
    expect(events.find((e: Loose) => e.callId === 'w' && e.type === 'tool.result')?.data.ok).toBe(true);
    expect(await upgraded.store.egress.get(tenantA)).toEqual(SECRET);
    const res = await upgraded.call(keyA, agent.id, [
      { id: 'r', name: 'read', arguments: { file_path: 'x' } },
    ]);
    expect(res.status).toBe(200);
    // The tenant's new columns have their defaults: active, no quotas; its key still named nothing.
    const tenant = await upgraded.store.tenants.getTenant(tenantA);
    expect(tenant).toMatchObject({ id: tenantA, state: 'active' });
  } finally {
    await upgraded.close();
  }
});

/** The rows of `table` from `from` into `to`, in the columns `to` has (generated ones left out). */
const copyPg = async (from: PgQueries, to: PgQueries, table: string): Promise<void> => {
  const columnsIn = async (q: PgQueries) =>
    (
      await q.many<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name = $1 AND is_generated = 'NEVER' ORDER BY ordinal_position`,
        [table],
      )
    ).map((r) => r.column_name);
  const have = new Set(await columnsIn(from));
  const columns = (await columnsIn(to)).filter((c) => have.has(c));
  const list = columns.map((c) => `"${c}"`).join(', ');
  await to.query(`DELETE FROM "${table}"`);
  for (const row of await from.many<Record<string, unknown>>(`SELECT ${list} FROM "${table}"`))
    await to.query(
      `INSERT INTO "${table}" (${list}) OVERRIDING SYSTEM VALUE VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
      columns.map((c) => row[c]),
    );
};

describePostgres('upgrade (postgres)', () => {
  it('opens a PostgreSQL store of the previous release holding live agents and migrates it', async () => {
    const key = Buffer.alloc(32, 9);
    const madeDb = await createDatabase();
    const oldDb = await createDatabase();
    let store: Store | undefined;
    try {
      const made = await openPgStore({ url: madeDb.url, secretsKey: key, eventBatchWindowMs: 0 });
      const tenant = await made.tenants.createTenant('acme');
      const agent = await made.agents.create({
        tenantId: tenant.id,
        preset: 'standard',
        mode: 'direct',
        config: {},
      });
      await made.events.append([
        { sessionId: agent.id, type: 'message.user', surface: 'current', data: { text: 'before' } },
      ]);
      await made.events.flush();
      await made.egress.put(tenant.id, SECRET);
      await made.close();

      const source = openPgDatabase({ url: madeDb.url, poolSize: 1 });
      const old = openPgDatabase({ url: oldDb.url, poolSize: 1 });
      await migratePg(old, PREVIOUS);
      expect(await pgSchemaVersion(old)).toBe(LATEST - 1);
      await old.query('SET session_replication_role = replica'); // foreign keys: rows come in any order
      const tables = await old.many<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables
         WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'`,
      );
      for (const { table_name } of tables) await copyPg(source, old, table_name);
      await source.close();
      await old.close();

      store = await openPgStore({ url: oldDb.url, secretsKey: key, eventBatchWindowMs: 0 });
      const check = openPgDatabase({ url: oldDb.url, poolSize: 1 });
      expect(await pgSchemaVersion(check)).toBe(LATEST);
      await check.close();
      expect((await store.tenants.verifyKey(tenant.apiKey))?.id).toBe(tenant.id);
      expect((await store.tenants.getTenant(tenant.id))?.state).toBe('active');
      expect((await store.agents.get(tenant.id, agent.id))?.id).toBe(agent.id);
      expect((await store.events.list(agent.id)).map((e) => e.data)).toEqual([{ text: 'before' }]);
      expect(await store.egress.get(tenant.id)).toEqual(SECRET);
    } finally {
      await store?.close();
      await madeDb.drop();
      await oldDb.drop();
    }
  }, 120_000);
});
