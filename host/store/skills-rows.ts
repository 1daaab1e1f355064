// The rows of a tenant's skill catalog (`skills`, `skill_files`) as both backends of the SkillStore
// read them: the row type, its summary columns, row → summary and row + files → package, and the
// count limit's error. One module, so the libsql (skills.ts) and PostgreSQL (pg/skills.ts)
// backends mean the same by every column and refuse with the same words; each keeps only its SQL
// and its transaction. Imports no backend.
import { SandboxError } from '../errors.ts';
import type { SkillFile, SkillPackage, SkillSummary } from './skills-port.ts';

export interface SkillRow {
  name: string;
  description: string;
  instructions?: string;
  digest: string;
  bytes: number;
  created_at: number;
  updated_at: number;
}

/** The columns a summary is read from, in SkillRow's order. */
export const SKILL_SUMMARY = 'name, description, digest, bytes, created_at, updated_at';

export const toSkillSummary = (r: SkillRow): SkillSummary => ({
  name: r.name,
  description: r.description,
  digest: r.digest,
  bytes: r.bytes,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** The whole package of a row read with its instructions, and its files. */
export const toSkillPackage = (row: SkillRow, files: SkillFile[]): SkillPackage => {
  const { createdAt: _c, updatedAt: _u, ...summary } = toSkillSummary(row);
  return { ...summary, instructions: row.instructions ?? '', files };
};

/** LIMIT_EXCEEDED when a tenant holding `n` skills may hold no more than `maxPerTenant`. */
export const checkSkillRoom = (n: number, maxPerTenant: number): void => {
  if (n >= maxPerTenant)
    throw new SandboxError(
      'LIMIT_EXCEEDED',
      `This tenant already has ${n} skills, the most it may have; delete one (DELETE /v1/skills/:name) first.`,
      { data: { limit: maxPerTenant } },
    );
};
