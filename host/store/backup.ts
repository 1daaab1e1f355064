// Backup and restore of the libsql store, and the check a restored store of either backend passes
// before a service starts on it (the PostgreSQL side is pg/verify.ts; dumps there are pg_dump's).
// A backup is `VACUUM INTO` through the driver on the live database file: one consistent snapshot
// of everything committed, taken while the service runs (readers and the writer thread go on), in
// a new file made 0600 beforehand (it holds key hashes and sealed secrets). It never holds the
// secrets key: a copy of the database alone must reveal no secret, so the key travels apart.
// A restore only ever creates a store where there is none (a fresh data directory): it copies the
// backup beside the target, migrates it as a start would, opens every sealed value with the key
// the service will use, and only then renames it into place; a wrong or missing key fails with
// CONFIG_INVALID (data.secretsKey) and leaves nothing behind, never a store that reads garbage.
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { SandboxError } from '../errors.ts';
import { type Database, guarded, openDatabase } from './db.ts';
import { instanceIdOf } from './instance.ts';
import { latestSchemaVersion, migrate, newerSchema, schemaVersion } from './migrations.ts';
import { createSealer, parseSecretsKey } from './sealed.ts';

/** Every column that holds sealed values (sealed.ts), on both backends. */
export const SEALED_COLUMNS: ReadonlyArray<readonly [table: string, column: string]> = [
  ['agents', 'mcp_servers'],
  ['tenant_egress', 'settings'],
  ['tenant_egress_ca', 'ca'],
];

/** The SELECT of a column's sealed values (the same text on both backends). */
export const sealedSelect = (table: string, column: string): string =>
  `SELECT ${column} AS v FROM ${table} WHERE ${column} LIKE 'sealed:v1:%'`;

export interface StoreCheck {
  schemaVersion: number;
  instanceId: string;
  /** Sealed values in the store; every one opened with the key. */
  sealedValues: number;
}

/**
 * CONFIG_INVALID unless every sealed value opens with `key` (undefined: no key was given, which
 * only a store without sealed values may lack).
 */
export const checkSealed = (values: readonly string[], key: Buffer | undefined, keyHint: string): void => {
  if (values.length === 0) return;
  if (key === undefined)
    throw new SandboxError(
      'CONFIG_INVALID',
      `The store holds ${values.length} sealed secret(s) and no secrets key was given: set DSH_SECRETS_KEY, or copy ${keyHint} from the old machine.`,
      { data: { secretsKey: 'missing', sealedValues: values.length } },
    );
  const sealer = createSealer(key);
  const unopened = values.filter((v) => {
    try {
      sealer.open(v);
      return false;
    } catch {
      return true;
    }
  }).length;
  if (unopened > 0)
    throw new SandboxError(
      'CONFIG_INVALID',
      `${unopened} of the store's ${values.length} sealed secret(s) do not open with this secrets key: the store was sealed under another key. Give the key of the service the backup came from (DSH_SECRETS_KEY, or ${keyHint}).`,
      { data: { secretsKey: 'mismatch', sealedValues: values.length, unopened } },
    );
};

const sealedOf = (db: Database): string[] =>
  guarded('read sealed values', () =>
    SEALED_COLUMNS.flatMap(([table, column]) =>
      (db.prepare(sealedSelect(table, column)).all() as { v: string }[]).map((r) => r.v),
    ),
  );

export interface BackupResult extends Omit<StoreCheck, 'sealedValues'> {
  file: string;
  bytes: number;
  /** Where the service's key lives when it has no DSH_SECRETS_KEY: copy it apart from the backup. */
  keyFile: string;
}

/** CONFIG_INVALID unless `path` is a database file (openDatabase would make an empty one). */
const existing = (path: string, what: string): void => {
  if (!existsSync(path) || !statSync(path).isFile())
    throw new SandboxError('CONFIG_INVALID', `${what}: no database file at ${path}`, { data: { path } });
};

/** An online backup of the libsql store at `dbPath` into the new file `file` (refused when it exists). */
export const backupLibsql = (dbPath: string, file: string): BackupResult => {
  existing(dbPath, 'backup');
  try {
    // Made first, empty and 0600 ('wx': an existing file is refused, never overwritten).
    writeFileSync(file, '', { mode: 0o600, flag: 'wx' });
  } catch (cause) {
    throw new SandboxError('CONFIG_INVALID', `backup: cannot create ${file}: ${(cause as Error).message}`, {
      cause,
      data: { file },
    });
  }
  const db = openDatabase({ path: dbPath });
  try {
    guarded('backup (VACUUM INTO)', () => db.prepare('VACUUM INTO ?').run(file));
    return {
      file,
      bytes: statSync(file).size,
      schemaVersion: schemaVersion(db),
      instanceId: instanceIdOf(db),
      keyFile: `${dbPath}.key`,
    };
  } catch (error) {
    rmSync(file, { force: true });
    throw error;
  } finally {
    db.close();
  }
};

/** The key a libsql store at `target` will be opened with: DSH_SECRETS_KEY, else its key file if there. */
const keyFor = (target: string, secretsKey: Buffer | undefined): Buffer | undefined => {
  if (secretsKey !== undefined) return secretsKey;
  const file = `${target}.key`;
  return existsSync(file) ? parseSecretsKey(readFileSync(file, 'utf8')) : undefined;
};

/** Migrates the database at `path` and checks it against `key`; what it holds. */
const checkLibsql = (path: string, key: Buffer | undefined, keyHint: string): StoreCheck => {
  const db = openDatabase({ path });
  try {
    const found = schemaVersion(db);
    if (found === 0)
      throw new SandboxError('CONFIG_INVALID', `${path} is not a dsh-sandbox store (no schema_migrations)`);
    if (found > latestSchemaVersion()) throw newerSchema(found, latestSchemaVersion());
    const integrity = guarded('integrity check', () =>
      (db.prepare('PRAGMA quick_check').all() as { quick_check: string }[]).map((r) => r.quick_check),
    );
    if (integrity.join() !== 'ok')
      throw new SandboxError('CONFIG_INVALID', `${path} is damaged: ${integrity.slice(0, 5).join('; ')}`);
    migrate(db);
    const sealed = sealedOf(db);
    checkSealed(sealed, key, keyHint);
    return { schemaVersion: schemaVersion(db), instanceId: instanceIdOf(db), sealedValues: sealed.length };
  } finally {
    db.close();
  }
};

export interface RestoreResult extends StoreCheck {
  restored: string;
  /** The schema version the backup was taken at (the restore migrated it to schemaVersion). */
  fromVersion: number;
}

/**
 * Restores `file` (a backup) as the libsql store at `target`, which must not exist yet. The key is
 * `secretsKey` (DSH_SECRETS_KEY) or the key file copied to `<target>.key`; see the header.
 */
export const restoreLibsql = (file: string, target: string, secretsKey?: Buffer): RestoreResult => {
  existing(file, 'restore');
  if (existsSync(target))
    throw new SandboxError(
      'CONFIG_INVALID',
      `restore: ${target} exists; restore into a fresh data directory (stop the service and move the old store away first)`,
      { data: { target } },
    );
  const staging = `${target}.restoring-${randomBytes(4).toString('hex')}`;
  openDatabase({ path: staging }).close(); // makes the data directory (0700) and a 0600 file
  try {
    copyFileSync(file, staging);
    const fromVersion = guarded('read the backup', () => {
      const db = openDatabase({ path: staging });
      try {
        return schemaVersion(db);
      } finally {
        db.close();
      }
    });
    const check = checkLibsql(staging, keyFor(target, secretsKey), `${target}.key`);
    renameSync(staging, target);
    return { restored: target, fromVersion, ...check };
  } finally {
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${staging}${suffix}`, { force: true });
  }
};

/** The check of the libsql store at `path` with the key a service will use (the `verify` command). */
export const verifyLibsql = (path: string, secretsKey?: Buffer): StoreCheck => {
  existing(path, 'verify');
  return checkLibsql(path, keyFor(path, secretsKey), `${path}.key`);
};
