// The check a PostgreSQL store passes after a restore (pg_restore, docs/operations.md), before a
// service starts on it: migrated as a start would, and every sealed value opened with the key the
// replicas will be given; the libsql twin is ../backup.ts. A wrong or missing key fails with
// CONFIG_INVALID (data.secretsKey), never with a service that reads garbage later.
import { checkSealed, SEALED_COLUMNS, type StoreCheck, sealedSelect } from '../backup.ts';
import { openPgDatabase } from './db.ts';
import { pgInstanceIdOf } from './instance.ts';
import { migratePg, pgSchemaVersion } from './migrate.ts';

/** Migrates the store at `url` and checks its sealed values against `key`. */
export const verifyPg = async (
  url: string,
  key: Buffer | undefined,
  keyHint: string,
): Promise<StoreCheck> => {
  const db = openPgDatabase({ url, poolSize: 1 });
  try {
    await migratePg(db);
    const sealed: string[] = [];
    for (const [table, column] of SEALED_COLUMNS)
      for (const row of await db.many<{ v: string }>(sealedSelect(table, column))) sealed.push(row.v);
    checkSealed(sealed, key, keyHint);
    return {
      schemaVersion: await pgSchemaVersion(db),
      instanceId: await pgInstanceIdOf(db),
      sealedValues: sealed.length,
    };
  } finally {
    await db.close();
  }
};
