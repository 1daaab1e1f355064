// The store commands of the command line (host/cli.ts): `backup <file>` and `restore <file>` of
// the libsql store (store/backup.ts: an online VACUUM INTO, a restore into a fresh data directory
// only), and `verify`, the check of the configured store on either backend (migrated, every sealed
// secret opened with the key a service will use) that a PostgreSQL restore (pg_restore) ends with.
// Each prints one JSON line. On PostgreSQL, dumps are pg_dump's: `backup` and `restore` say so.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from './config.ts';
import { SandboxError } from './errors.ts';
import { isPostgresUrl } from './store/pg/url.ts';
import { parseSecretsKey } from './store/sealed.ts';

export const BACKUP_USAGE = `  backup <file>                      an online backup of the libsql store into a new file
                                     (PostgreSQL: pg_dump; docs/operations.md)
  restore <file>                     a backup as the store of a fresh data directory (checked
                                     against the secrets key first); PostgreSQL: pg_restore, then verify
  verify                             the store migrated, and every sealed secret opened with the key`;

const print = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value)}\n`);
};

/** PostgreSQL's key when none is set: the data directory's key file, when there (never made here). */
const pgKey = (config: Config): Buffer | undefined => {
  if (config.secretsKey !== undefined) return config.secretsKey;
  const file = join(config.dataDir, 'secrets.key');
  return existsSync(file) ? parseSecretsKey(readFileSync(file, 'utf8')) : undefined;
};

/** `backup`, `restore` or `verify` on the configured store; the exit code (2: usage). */
export const runBackup = async (
  config: Config,
  command: 'backup' | 'restore' | 'verify',
  [file]: string[],
): Promise<number> => {
  if (command !== 'verify' && !file) {
    process.stderr.write(`usage:\n${BACKUP_USAGE}\n`);
    return 2;
  }
  const postgres = isPostgresUrl(config.database);
  if (postgres && command !== 'verify')
    throw new SandboxError(
      'CONFIG_INVALID',
      command === 'backup'
        ? 'the store is on PostgreSQL: back it up with pg_dump -Fc (docs/operations.md, "Backup and restore")'
        : 'the store is on PostgreSQL: restore the dump with pg_restore, then run `verify` (docs/operations.md)',
    );
  const store = await import('./store/backup.ts');
  // The libsql file DSH_DB names (a path or a `file:` URL), as the service opens it.
  const { libsqlPath: pathOf } = await import('./store/connect.ts');
  const libsqlPath = (database: string): string => resolve(pathOf(database));
  if (command === 'backup') print(store.backupLibsql(libsqlPath(config.database), resolve(file as string)));
  else if (command === 'restore')
    print(store.restoreLibsql(resolve(file as string), libsqlPath(config.database), config.secretsKey));
  else if (!postgres) print(store.verifyLibsql(libsqlPath(config.database), config.secretsKey));
  else {
    const { verifyPg } = await import('./store/pg/verify.ts');
    print(await verifyPg(config.database, pgKey(config), join(config.dataDir, 'secrets.key')));
  }
  return 0;
};
