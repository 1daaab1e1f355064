// A tenant's skill catalog on PostgreSQL: the SkillStore of ../skills.ts over the same rows
// (`skills`, one per skill; `skill_files`, one per file of its package), with its invariants:
// every read and delete takes the tenant, so nobody reaches another tenant's skills; a put
// replaces a skill's whole package (row and files) in one transaction, and the count limit is
// checked in that same transaction.
// Where Postgres differs, and why: libsql's count-then-insert is safe under BEGIN IMMEDIATE (one
// writer for the whole file); two replicas here could both count n - 1 and both insert, and a new
// skill has no row to lock yet. So put() and delete() first take a transaction-scoped advisory
// lock on the tenant's catalog (a hash of 'skills:' and the tenant id): one tenant's puts and
// deletes queue across replicas, other tenants' do not (a hash collision only makes two queue).
// Names and paths list in byte order (COLLATE "C"), SQLite's BINARY order, whatever the
// database's collation.
import type { SkillPackage, SkillStore } from '../skills-port.ts';
import {
  checkSkillRoom,
  SKILL_SUMMARY,
  type SkillRow,
  toSkillPackage,
  toSkillSummary,
} from '../skills-rows.ts';
import { type PgDatabase, type PgQueries, pgGuarded } from './db.ts';

const one = (q: PgQueries, tenantId: string, name: string): Promise<SkillRow | undefined> =>
  q.one<SkillRow>(`SELECT ${SKILL_SUMMARY}, instructions FROM skills WHERE tenant_id = $1 AND name = $2`, [
    tenantId,
    name,
  ]);

/** The tenant's catalog, one writer at a time across replicas until this transaction ends. */
const lockCatalog = async (tx: PgQueries, tenantId: string): Promise<void> => {
  await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('skills:' || $1, 0))", [tenantId]);
};

/** Writes the package's row (keeping created_at when it replaces one) and its files, whole. */
const writePackage = async (tx: PgQueries, tenantId: string, skill: SkillPackage, at: number) => {
  await tx.query(
    `INSERT INTO skills (tenant_id, name, description, instructions, digest, bytes, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
     ON CONFLICT (tenant_id, name) DO UPDATE SET description = excluded.description,
       instructions = excluded.instructions, digest = excluded.digest, bytes = excluded.bytes,
       updated_at = excluded.updated_at`,
    [tenantId, skill.name, skill.description, skill.instructions, skill.digest, skill.bytes, at],
  );
  await tx.query('DELETE FROM skill_files WHERE tenant_id = $1 AND name = $2', [tenantId, skill.name]);
  if (skill.files.length === 0) return;
  // One statement for the whole package: its files as parallel arrays.
  await tx.query(
    `INSERT INTO skill_files (tenant_id, name, path, mode, content)
     SELECT $1, $2, f.path, f.mode, f.content
       FROM unnest($3::text[], $4::integer[], $5::bytea[]) AS f(path, mode, content)`,
    [
      tenantId,
      skill.name,
      skill.files.map((f) => f.path),
      skill.files.map((f) => f.mode),
      skill.files.map((f) => f.content),
    ],
  );
};

export const createPgSkillStore = (db: PgDatabase, now: () => number = Date.now): SkillStore => ({
  put: (tenantId, skill, maxPerTenant) =>
    pgGuarded('store a skill', () =>
      db.tx(async (tx) => {
        await lockCatalog(tx, tenantId);
        const before = await tx.one('SELECT created_at FROM skills WHERE tenant_id = $1 AND name = $2', [
          tenantId,
          skill.name,
        ]);
        if (before === undefined) {
          const n =
            (await tx.one<{ n: number }>('SELECT count(*) AS n FROM skills WHERE tenant_id = $1', [tenantId]))
              ?.n ?? 0;
          checkSkillRoom(n, maxPerTenant);
        }
        await writePackage(tx, tenantId, skill, now());
        const row = (await one(tx, tenantId, skill.name)) as SkillRow;
        return { summary: toSkillSummary(row), created: before === undefined };
      }),
    ),

  list: (tenantId) =>
    pgGuarded('list skills', async () =>
      (
        await db.many<SkillRow>(
          `SELECT ${SKILL_SUMMARY} FROM skills WHERE tenant_id = $1 ORDER BY name COLLATE "C"`,
          [tenantId],
        )
      ).map(toSkillSummary),
    ),

  get: (tenantId, name) =>
    pgGuarded('read a skill', async () => {
      const row = await one(db, tenantId, name);
      return row === undefined ? undefined : toSkillSummary(row);
    }),

  files: (tenantId, name) =>
    pgGuarded('list a skill', () =>
      db.many<{ path: string; bytes: number }>(
        `SELECT path, octet_length(content) AS bytes FROM skill_files
          WHERE tenant_id = $1 AND name = $2 ORDER BY path COLLATE "C"`,
        [tenantId, name],
      ),
    ),

  load: (tenantId, name) =>
    pgGuarded('load a skill', async () => {
      // The row and its files from one snapshot, so a put committing between them is not half seen.
      const loaded = await db.tx(async (tx) => {
        await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const row = await one(tx, tenantId, name);
        if (row === undefined) return undefined;
        const files = await tx.many<{ path: string; mode: number; content: Buffer }>(
          `SELECT path, mode, content FROM skill_files
            WHERE tenant_id = $1 AND name = $2 ORDER BY path COLLATE "C"`,
          [tenantId, name],
        );
        return { row, files };
      });
      if (loaded === undefined) return undefined;
      return toSkillPackage(loaded.row, loaded.files);
    }),

  delete: (tenantId, name) =>
    pgGuarded('delete a skill', () =>
      db.tx(async (tx) => {
        await lockCatalog(tx, tenantId);
        await tx.query('DELETE FROM skill_files WHERE tenant_id = $1 AND name = $2', [tenantId, name]);
        const { rowCount } = await tx.query('DELETE FROM skills WHERE tenant_id = $1 AND name = $2', [
          tenantId,
          name,
        ]);
        return rowCount > 0;
      }),
    ),
});
