// connectStore: DSH_DB picks the backend (a postgres:// URL PostgreSQL, anything else the libsql
// file), the PostgreSQL store is held by one service at a time, and its default secrets key lives
// in the data directory.
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { connectStore, SECRETS_KEY_FILE } from '../../../host/store/connect.ts';
import type { Store } from '../../../host/store/index.ts';
import { createDatabase, describePostgres, type TestDatabase } from '../../helpers/postgres.ts';

const dirs: string[] = [];
const dataDir = () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'dsh-connect-')), 'data');
  dirs.push(dir);
  return dir;
};
const opened: Store[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});
afterAll(() => {
  for (const dir of dirs) rmSync(join(dir, '..'), { recursive: true, force: true });
});

describe('connectStore on libsql', () => {
  it('opens the libsql file a path names, as npm start does by default', async () => {
    const dir = dataDir();
    const store = await connectStore({ database: join(dir, 'store.db'), dataDir: dir });
    opened.push(store);
    expect(store.backend).toBe('libsql');
    expect(existsSync(join(dir, 'store.db'))).toBe(true);
    expect(existsSync(join(dir, SECRETS_KEY_FILE))).toBe(false); // its key sits beside the file
  });

  it('opens the file a file: URL names, its key file beside it (the same file backup reads)', async () => {
    const dir = dataDir();
    const store = await connectStore({ database: pathToFileURL(join(dir, 'url.db')).href, dataDir: dir });
    opened.push(store);
    expect(existsSync(join(dir, 'url.db'))).toBe(true);
    expect(existsSync(join(dir, 'url.db.key'))).toBe(true);
  });
});

describePostgres('connectStore on PostgreSQL', () => {
  let database: TestDatabase;
  afterAll(async () => database?.drop());

  it('opens PostgreSQL for a postgres:// URL, migrated, with a key file made in the data directory', async () => {
    database = await createDatabase();
    const dir = dataDir();
    const lines: string[] = [];
    const store = await connectStore({ database: database.url, dataDir: dir, log: (l) => lines.push(l) });
    opened.push(store);
    expect(store.backend).toBe('postgres');
    expect(statSync(join(dir, SECRETS_KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(lines.join('\n')).toContain('DSH_SECRETS_KEY');
    const tenant = await store.tenants.createTenant('t');
    expect((await store.tenants.verifyKey(tenant.apiKey))?.id).toBe(tenant.id);
  });

  it('opens the same database for a second service (a replica) while the first runs: both see one store', async () => {
    const dir = dataDir();
    const first = await connectStore({ database: database.url, dataDir: dir });
    opened.push(first);
    const second = await connectStore({ database: database.url, dataDir: dir });
    opened.push(second);
    expect(first.leases).toBeDefined();
    const made = await second.tenants.createTenant('made-by-the-second');
    expect((await first.tenants.listTenants()).map((t) => t.id)).toContain(made.id);
  });

  it('names the database without its password when it cannot connect', async () => {
    const url = database.url
      .replace('postgres@', 'postgres:hunter2@')
      .replace(/\/dsh_test_[^?]+/, '/no_such_db');
    const error = await connectStore({ database: url, dataDir: dataDir() }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'STORE_FAILED' });
    expect(String((error as Error).message)).not.toContain('hunter2');
  });
});
