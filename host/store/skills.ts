// A tenant's skill catalog (the `skill` tool): one row per skill in `skills` and one per file of its
// package in `skill_files` (migration 9). The store keeps validated packages and decides nothing
// about their format (host/skills/package.ts does). Invariants: every read and delete takes the
// tenant, so nobody reaches another tenant's skills; a put replaces a skill's whole package (row
// and files) in one transaction, and the count limit is checked in that same transaction. Every
// method returns a Promise (the port a network database can implement); this libsql implementation
// runs its statements synchronously inside them, a transaction never spans an await.
// The port's types are in skills-port.ts (re-exported here); the rows both backends share in
// skills-rows.ts.
import { type Database, guarded, immediate } from './db.ts';
import type { SkillStore } from './skills-port.ts';
import {
  checkSkillRoom,
  SKILL_SUMMARY,
  type SkillRow,
  toSkillPackage,
  toSkillSummary,
} from './skills-rows.ts';

export type { SkillFile, SkillPackage, SkillStore, SkillSummary } from './skills-port.ts';

export const createSkillStore = (db: Database, now: () => number = Date.now): SkillStore => {
  const count = db.prepare('SELECT count(*) AS n FROM skills WHERE tenant_id = ?');
  const existing = db.prepare('SELECT created_at FROM skills WHERE tenant_id = ? AND name = ?');
  const upsert = db.prepare(
    `INSERT INTO skills (tenant_id, name, description, instructions, digest, bytes, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (tenant_id, name) DO UPDATE SET description = excluded.description,
       instructions = excluded.instructions, digest = excluded.digest, bytes = excluded.bytes,
       updated_at = excluded.updated_at`,
  );
  const insertFile = db.prepare(
    'INSERT INTO skill_files (tenant_id, name, path, mode, content) VALUES (?, ?, ?, ?, ?)',
  );
  const removeFiles = db.prepare('DELETE FROM skill_files WHERE tenant_id = ? AND name = ?');
  const remove = db.prepare('DELETE FROM skills WHERE tenant_id = ? AND name = ?');
  const select = db.prepare(`SELECT ${SKILL_SUMMARY} FROM skills WHERE tenant_id = ? ORDER BY name`);
  const selectOne = db.prepare(
    `SELECT ${SKILL_SUMMARY}, instructions FROM skills WHERE tenant_id = ? AND name = ?`,
  );
  const selectFiles = db.prepare(
    'SELECT path, length(content) AS bytes FROM skill_files WHERE tenant_id = ? AND name = ? ORDER BY path',
  );
  const selectContents = db.prepare(
    'SELECT path, mode, content FROM skill_files WHERE tenant_id = ? AND name = ? ORDER BY path',
  );

  const one = (tenantId: string, name: string): SkillRow | undefined =>
    selectOne.all(tenantId, name)[0] as SkillRow | undefined;

  return {
    put: async (tenantId, skill, maxPerTenant) =>
      guarded('store a skill', () =>
        immediate(db, () => {
          const before = existing.all(tenantId, skill.name)[0] as { created_at: number } | undefined;
          if (before === undefined) {
            const { n } = count.all(tenantId)[0] as { n: number };
            checkSkillRoom(n, maxPerTenant);
          }
          const at = now();
          upsert.run(
            tenantId,
            skill.name,
            skill.description,
            skill.instructions,
            skill.digest,
            skill.bytes,
            at,
            at,
          );
          removeFiles.run(tenantId, skill.name);
          for (const file of skill.files)
            insertFile.run(tenantId, skill.name, file.path, file.mode, file.content);
          return {
            summary: toSkillSummary(one(tenantId, skill.name) as SkillRow),
            created: before === undefined,
          };
        }),
      ),
    list: async (tenantId) =>
      guarded('list skills', () => (select.all(tenantId) as SkillRow[]).map(toSkillSummary)),
    get: async (tenantId, name) =>
      guarded('read a skill', () => {
        const row = one(tenantId, name);
        return row === undefined ? undefined : toSkillSummary(row);
      }),
    files: async (tenantId, name) =>
      guarded('list a skill', () => selectFiles.all(tenantId, name) as { path: string; bytes: number }[]),
    load: async (tenantId, name) =>
      guarded('load a skill', () => {
        const row = one(tenantId, name);
        if (row === undefined) return undefined;
        const rows = selectContents.all(tenantId, name) as {
          path: string;
          mode: number;
          content: Uint8Array;
        }[];
        const files = rows.map((f) => ({ path: f.path, mode: f.mode, content: Buffer.from(f.content) }));
        return toSkillPackage(row, files);
      }),
    delete: async (tenantId, name) =>
      guarded('delete a skill', () =>
        immediate(db, () => {
          removeFiles.run(tenantId, name);
          return remove.run(tenantId, name).changes > 0;
        }),
      ),
  };
};
