// The SkillStore port: a tenant's skill catalog as every backend keeps it (libsql: skills.ts,
// PostgreSQL: pg/skills.ts, their shared rows: skills-rows.ts). Types only.

/** A skill as the catalog lists it. */
export interface SkillSummary {
  name: string;
  description: string;
  /** sha256 of the package (hex): changes whenever any file does. */
  digest: string;
  /** Bytes of all its files. */
  bytes: number;
  createdAt: number;
  updatedAt: number;
}

export interface SkillFile {
  /** Relative to the package root, `/`-separated; `SKILL.md` is one of them. */
  path: string;
  /** Permission bits as uploaded (0o755 keeps a script executable in the workspace). */
  mode: number;
  content: Buffer;
}

/** A whole package, as put and as loaded. */
export interface SkillPackage extends Omit<SkillSummary, 'createdAt' | 'updatedAt'> {
  /** SKILL.md after its front matter: the instructions. */
  instructions: string;
  files: SkillFile[];
}

export interface SkillStore {
  /**
   * Adds or replaces the tenant's skill of that name. LIMIT_EXCEEDED when it is new and the tenant
   * already has `maxPerTenant`. Returns its summary and whether it was new.
   */
  put(
    tenantId: string,
    skill: SkillPackage,
    maxPerTenant: number,
  ): Promise<{ summary: SkillSummary; created: boolean }>;
  /** The tenant's skills by name. */
  list(tenantId: string): Promise<SkillSummary[]>;
  get(tenantId: string, name: string): Promise<SkillSummary | undefined>;
  /** The file paths and sizes of one skill, by path. */
  files(tenantId: string, name: string): Promise<{ path: string; bytes: number }[]>;
  /** The whole package, contents included. */
  load(tenantId: string, name: string): Promise<SkillPackage | undefined>;
  /** False when the tenant has no such skill. */
  delete(tenantId: string, name: string): Promise<boolean>;
}
