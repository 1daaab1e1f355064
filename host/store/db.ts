// Opens the libsql database the store lives in, and owns the few rules every query follows:
// the sync `libsql` API on a local file (WAL, busy timeout, foreign keys, synchronous NORMAL),
// rows without libsql's `_metadata`, write transactions as explicit `BEGIN IMMEDIATE` around SYNC
// functions only (libsql/promise's async transactions do not roll back), and libsql errors
// translated once, here, into SandboxError STORE_FAILED with the original as `cause`.
import { chmodSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type LibsqlDatabase from 'libsql';
import { isSandboxError, messageOf, SandboxError } from '../errors.ts';

export type Database = LibsqlDatabase.Database;
export type Row = Record<string, unknown>;

// libsql is CommonJS with `export =`; createRequire keeps its typings and works under type stripping.
const Libsql = createRequire(import.meta.url)('libsql') as typeof LibsqlDatabase;

export interface OpenDatabaseOptions {
  /** A file path, or `:memory:` for tests. Its directory is created with mode 0700. */
  path?: string;
  /** `file:` URLs open a local file. Remote libsql URLs (http, https, libsql, ws) are not supported yet. */
  url?: string;
  /** Busy timeout in ms: how long a writer waits for another connection's lock. Default 5000. */
  busyTimeoutMs?: number;
}

const REMOTE_URL = /^(https?|libsql|wss?):/i;

/** Opens (creating if needed) the store database. Throws CONFIG_INVALID for unusable locations. */
export const openDatabase = (options: OpenDatabaseOptions): Database => {
  const path = resolveLocation(options);
  const memory = path === ':memory:';
  if (!memory) {
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    } catch (cause) {
      throw new SandboxError(
        'CONFIG_INVALID',
        `cannot create the data directory for ${path}: ${messageOf(cause)}`,
        {
          cause,
          data: { path },
        },
      );
    }
  }
  let db: Database;
  try {
    db = new Libsql(path, { timeout: options.busyTimeoutMs ?? 5000 });
  } catch (cause) {
    throw new SandboxError('CONFIG_INVALID', `cannot open the database at ${path}: ${messageOf(cause)}`, {
      cause,
      data: { path },
    });
  }
  try {
    if (!memory) {
      // Takes effect only in a database that has no table yet: a new store can give the pages
      // retention frees back to the file system (incremental_vacuum, host/store/log-retention.ts).
      // An older store keeps reusing them until `retention vacuum` rebuilds it (docs/operations.md).
      db.pragma('auto_vacuum = INCREMENTAL');
      db.pragma('journal_mode = WAL');
      chmodSync(path, 0o600);
    }
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
  } catch (cause) {
    db.close();
    throw storeError('open database', cause);
  }
  return db;
};

/** The absolute file path (or `:memory:`) that `openDatabase` opens for these options. */
export const resolveLocation = (options: OpenDatabaseOptions): string => {
  if (options.path !== undefined && options.url !== undefined) {
    throw new SandboxError('CONFIG_INVALID', 'give the store either a path or a url, not both');
  }
  const { url } = options;
  if (url !== undefined) {
    if (REMOTE_URL.test(url)) {
      throw new SandboxError(
        'CONFIG_INVALID',
        `remote libsql databases (${url.split(':')[0]}:) are not supported yet; use a local file path`,
        { data: { scheme: url.split(':')[0] } },
      );
    }
    if (url.startsWith('file:')) return fileURLToPath(new URL(url, 'file:///'));
    throw new SandboxError('CONFIG_INVALID', `unsupported database url ${url}; use a file path or file: url`);
  }
  if (options.path === undefined || options.path === '') {
    throw new SandboxError('CONFIG_INVALID', 'the store needs a database path (or :memory:)');
  }
  return options.path === ':memory:' ? ':memory:' : resolve(options.path);
};

/** A copy of a `.get()` row without libsql's enumerable `_metadata` property. */
export const stripMetadata = <T extends Row>(row: T): Omit<T, '_metadata'> => {
  if (!Object.hasOwn(row, '_metadata')) return row;
  const { _metadata, ...rest } = row;
  return rest;
};

/**
 * Runs a SYNC function inside `BEGIN IMMEDIATE … COMMIT`, rolling back when it throws. Never pass
 * an async function: the commit would happen before its awaits. Nested calls join the outer one.
 */
export const immediate = <T>(db: Database, fn: () => T): T => {
  if (db.inTransaction) return fn();
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = fn();
    if (result instanceof Promise) throw new TypeError('immediate() takes a sync function only');
    db.exec('COMMIT');
    return result;
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
};

/** Translates a libsql error into STORE_FAILED (SandboxErrors pass through unchanged). */
export const storeError = (operation: string, cause: unknown): SandboxError => {
  if (isSandboxError(cause)) return cause;
  const sqliteCode = (cause as { code?: unknown } | null)?.code;
  const busy = sqliteCode === 'SQLITE_BUSY' || sqliteCode === 'SQLITE_LOCKED';
  const hint = busy ? ' (another process holds the database lock; retry, or stop the other process)' : '';
  return new SandboxError('STORE_FAILED', `store: ${operation} failed: ${messageOf(cause)}${hint}`, {
    cause,
    data: { operation, ...(typeof sqliteCode === 'string' ? { sqliteCode } : {}) },
  });
};

/** Runs `fn`, translating anything libsql throws into STORE_FAILED. */
export const guarded = <T>(operation: string, fn: () => T): T => {
  try {
    return fn();
  } catch (cause) {
    throw storeError(operation, cause);
  }
};
