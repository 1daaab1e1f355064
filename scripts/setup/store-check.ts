// `npm run doctor`'s store line: connects to the database DSH_DB names, reads its schema version
// and compares it with this build's. Changes nothing: a database that does not exist yet is
// reported as made on first start, never created here.
import { existsSync } from 'node:fs';
import { latestSchemaVersion } from '../../host/store/migrations.ts';
import { isPostgresUrl, redactUrl } from '../../host/store/pg/url.ts';

const versionLine = (version: number, where: string): string => {
  const latest = latestSchemaVersion();
  if (version > latest)
    throw new Error(
      `${where}: schema version ${version} is newer than this build's ${latest}; upgrade dsh-sandbox`,
    );
  return version === latest
    ? `${where}, schema version ${version} (current)`
    : `${where}, schema version ${version} (start migrates it to ${latest})`;
};

const postgresCheck = async (url: string): Promise<string> => {
  const { openPgDatabase } = await import('../../host/store/pg/db.ts');
  const { pgSchemaVersion } = await import('../../host/store/pg/migrate.ts');
  const db = openPgDatabase({ url, poolSize: 1, connectTimeoutMs: 5000 });
  try {
    const server = await db.one<{ v: string }>("SELECT current_setting('server_version') AS v");
    return versionLine(await pgSchemaVersion(db), `PostgreSQL ${server?.v ?? '?'} at ${redactUrl(url)}`);
  } finally {
    await db.close();
  }
};

const libsqlCheck = async (path: string): Promise<string> => {
  if (!existsSync(path)) return `libsql ${path} (made on first start)`;
  const { default: Database } = await import('libsql');
  const db = new Database(path, { readonly: true, timeout: 5000 });
  try {
    const table = db.prepare("SELECT name FROM sqlite_master WHERE name = 'schema_migrations'").all();
    const version =
      table.length === 0
        ? 0
        : ((db.prepare('SELECT max(version) AS v FROM schema_migrations').all()[0] as { v: number | null })
            .v ?? 0);
    return versionLine(version, `libsql ${path}`);
  } finally {
    db.close();
  }
};

/** One line on the store DSH_DB names; throws what is wrong with it. */
export const storeCheck = (database: string): Promise<string> =>
  isPostgresUrl(database) ? postgresCheck(database) : libsqlCheck(database);
