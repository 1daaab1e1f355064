// Brings a PostgreSQL store's schema up to date from the one migration list (../migrations.ts),
// the counterpart of migrate() there. Invariants: everything pending runs in ONE transaction
// under a transaction-scoped advisory lock, so replicas starting at once apply each version once
// (the second waits, then finds nothing left) and a failed step leaves the schema as it was;
// `schema_migrations` lists every version, the SQLite-only ones below the baseline included
// (recorded, nothing run: pg/baseline.ts made their schema), so both backends report the same
// version; a database whose schema is newer than this code is refused, never touched, with the
// same error as on SQLite; a list in which a version after the baseline lacks its pg step is a
// build defect and refused before anything runs.
import { SandboxError } from '../../errors.ts';
import { latestSchemaVersion, MIGRATIONS, type Migration, newerSchema } from '../migrations.ts';
import type { PgDatabase, PgQueries } from './db.ts';

/** The advisory lock key every migrating replica takes ('dshmig' in ASCII; below 2^53). */
export const MIGRATION_LOCK_KEY = 0x6473_686d_6967;

const SCHEMA_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`;

/** Refuses a list where a version after the first pg step has none (it would silently do nothing). */
const checkList = (sorted: readonly Migration[]): void => {
  const first = sorted.findIndex((m) => m.pg !== undefined);
  const missing = first < 0 ? sorted : sorted.slice(first).filter((m) => m.pg === undefined);
  if (missing.length > 0) {
    const versions = missing.map((m) => m.version);
    throw new SandboxError(
      'STORE_FAILED',
      `migrations ${versions.join(', ')} have no PostgreSQL step; every migration after the baseline needs one (pg: { sql })`,
      { data: { versions } },
    );
  }
};

const versionsOf = async (q: PgQueries): Promise<Set<number>> =>
  new Set((await q.many<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => r.version));

/** The highest applied version, 0 for a fresh database (nothing is created to find out). */
export const pgSchemaVersion = async (db: PgQueries): Promise<number> => {
  const table = await db.one<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t");
  if (table?.t == null) return 0;
  const row = await db.one<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
  return row?.v ?? 0;
};

/** The version's pg step, its errors named after the migration (as SQLite's are). */
const apply = async (tx: PgQueries, migration: Migration): Promise<void> => {
  try {
    if (migration.pg !== undefined) {
      await tx.query(migration.pg.sql);
      await migration.pg.up?.(tx);
    }
    await tx.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
      migration.version,
      migration.name,
      Date.now(),
    ]);
  } catch (cause) {
    const operation = `migration ${migration.version} (${migration.name})`;
    const inner = cause instanceof SandboxError ? cause.data : undefined;
    throw new SandboxError('STORE_FAILED', `store: ${operation} failed: ${(cause as Error).message}`, {
      cause,
      data: { ...inner, operation },
    });
  }
};

/**
 * Brings the schema up to date. Returns the versions applied now (recorded ones included). Throws
 * CONFIG_INVALID when the database was written by newer code, STORE_FAILED (with the migration
 * named) when one fails.
 */
export const migratePg = async (
  db: PgDatabase,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<number[]> => {
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  checkList(sorted);
  const latest = latestSchemaVersion(migrations);
  return db.tx(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await tx.query(SCHEMA_TABLE);
    const done = await versionsOf(tx);
    const current = Math.max(0, ...done);
    if (current > latest) {
      throw newerSchema(current, latest);
    }
    const applied: number[] = [];
    // By version, not only past the highest, as on SQLite.
    for (const migration of sorted) {
      if (done.has(migration.version)) continue;
      await apply(tx, migration);
      applied.push(migration.version);
    }
    return applied;
  });
};
