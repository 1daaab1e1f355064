// Which store the integration harnesses (api/served.ts, security/harness.ts) start the service on:
// libsql (the default, a file in the test's data directory) or PostgreSQL (a fresh database in the
// run's private cluster, tests/helpers/postgres.ts). The files under tests/integration/postgres/
// switch to PostgreSQL and then import an API scenario, so the same cases run on both stores.
import { createDatabase, type TestDatabase } from '../helpers/postgres.ts';

let mode: 'libsql' | 'postgres' = 'libsql';

/** From now on, harnesses in this test file start the service on PostgreSQL. */
export const usePostgresStore = (): void => {
  mode = 'postgres';
};

/**
 * The DSH_DB a harness starting now should use: undefined for the default libsql file, else a
 * fresh PostgreSQL database (drop it once the service is closed).
 */
export const storeDatabase = async (): Promise<TestDatabase | undefined> =>
  mode === 'postgres' ? await createDatabase() : undefined;

/** Throws when a harness asked for PostgreSQL but the service it started runs on something else. */
export const checkBackend = (database: TestDatabase | undefined, store: { backend: string }): void => {
  if (database !== undefined && store.backend !== 'postgres')
    throw new Error(`the service was asked to run on PostgreSQL but runs on ${store.backend}`);
};
