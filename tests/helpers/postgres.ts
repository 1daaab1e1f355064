// What a test sees of the run's private PostgreSQL cluster (tests/helpers/postgres-global-setup.ts):
// `describePostgres` declares a suite that needs it (skipped, with the reason in its name, when
// PostgreSQL is not installed), and `createDatabase` makes a fresh database in it for one test file
// and drops it afterwards (`createStoreDatabase`: one with the store's schema, and pools on it for
// a port's Postgres harness). Invariant: a test only ever uses databases it created here, in the
// cluster its own run started; nothing reaches a system cluster or a TCP port.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, inject } from 'vitest';
import { openPgDatabase, type PgDatabase } from '../../host/store/pg/db.ts';
import { migratePg } from '../../host/store/pg/migrate.ts';
import { postgresUrl } from './postgres-cluster.ts';

// pg fills what a connection's settings leave out from libpq's PG* variables (PGSSLMODE,
// PGOPTIONS, PGPASSWORD, PGAPPNAME, …): a developer's shell must not change what the tests connect
// to or how. Every test that reaches PostgreSQL imports this module first.
for (const name of Object.keys(process.env)) if (name.startsWith('PG')) delete process.env[name];

export interface TestDatabase {
  /** `postgres://postgres@localhost/<name>?host=<socket dir>`. */
  url: string;
  name: string;
  /** Drops the database, ending any connection still open to it. Idempotent. */
  drop(): Promise<void>;
}

/** The run's cluster; throws with the reason when there is none. */
const cluster = (): { socketDir: string; adminUrl: string } => {
  const provided = inject('postgres');
  if ('missing' in provided) throw new Error(provided.missing);
  if ('failed' in provided) throw new Error(provided.failed);
  return provided;
};

/** Why PostgreSQL tests cannot run in this run, or undefined when they can (or must fail). */
export const postgresMissing = (): string | undefined => {
  const provided = inject('postgres');
  return 'missing' in provided ? provided.missing : undefined;
};

/** describe() for a suite that needs PostgreSQL: skipped with the reason in its name when it is missing. */
export const describePostgres = (name: string, fn: () => void): void => {
  const missing = postgresMissing();
  if (missing === undefined) describe(name, fn);
  else describe.skip(`${name} [skipped: ${missing}]`, fn);
};

const admin = async <T>(fn: (client: pg.Client) => Promise<T>): Promise<T> => {
  const client = new pg.Client({ connectionString: cluster().adminUrl, application_name: 'dsh-tests' });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
};

/** A fresh, empty database in the run's cluster. Drop it in afterAll/afterEach. */
export const createDatabase = async (): Promise<TestDatabase> => {
  const { socketDir } = cluster();
  const name = `dsh_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8'`));
  let dropped = false;
  return {
    url: postgresUrl(socketDir, name),
    name,
    async drop() {
      if (dropped) return;
      dropped = true;
      await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
};

export interface StoreDatabase extends TestDatabase {
  /** A new pool on the database: a port's store, a second replica, or the same store restarted. */
  open(options?: { poolSize?: number }): PgDatabase;
  /** Closes every pool open() made, then drops the database. Idempotent. */
  drop(): Promise<void>;
}

/** A fresh database migrated to the store's schema (host/store/pg/migrate.ts). */
export const createStoreDatabase = async (): Promise<StoreDatabase> => {
  const database = await createDatabase();
  const pools: PgDatabase[] = [];
  const open = (options: { poolSize?: number } = {}) => {
    const db = openPgDatabase({ url: database.url, poolSize: options.poolSize ?? 2 });
    pools.push(db);
    return db;
  };
  try {
    await migratePg(open({ poolSize: 1 }));
  } catch (error) {
    for (const db of pools) await db.close();
    await database.drop();
    throw error;
  }
  return {
    ...database,
    open,
    async drop() {
      for (const db of pools.splice(0)) await db.close();
      await database.drop();
    },
  };
};
