// A tenant's skill catalog as the API and the `skill` tool use it: uploads (a tar, validated whole
// by host/sandbox/tar.ts's hostile-archive checks before anything is kept, then by package.ts),
// listing, reading, deleting, over the durable SkillStore. Invariants: every operation takes the
// tenant; listeners hear of a change after it is stored, so a tool made then lists the new catalog.
import type { Readable } from 'node:stream';
import { SandboxError } from '../errors.ts';
import { receiveUpload } from '../sandbox/tar.ts';
import type { SkillStore, SkillSummary } from '../store/skills.ts';
import type { SkillPort } from '../tools/builtin/skill.ts';
import { checkSkillName, DEFAULT_SKILL_LIMITS, packageOf, type SkillLimits } from './package.ts';

export interface SkillDetail extends SkillSummary {
  files: { path: string; bytes: number }[];
}

export interface SkillCatalog extends SkillPort {
  readonly limits: SkillLimits;
  /** Stores the tar's package as the tenant's skill `name` (replacing it); `created` when it is new. */
  upload(tenantId: string, name: string, tar: Readable): Promise<{ skill: SkillDetail; created: boolean }>;
  summaries(tenantId: string): SkillSummary[];
  get(tenantId: string, name: string): SkillDetail | undefined;
  /** False when the tenant has no such skill. */
  delete(tenantId: string, name: string): boolean;
  /** Told the tenant whose catalog changed; returns the unsubscriber. */
  onChange(listener: (tenantId: string) => void): () => void;
}

export interface SkillCatalogOptions {
  store: SkillStore;
  /** Default DEFAULT_SKILL_LIMITS. */
  limits?: Partial<SkillLimits>;
  /** Where uploads wait while they are checked. Default: the OS temp directory. */
  spoolDir?: string;
}

export function createSkillCatalog(options: SkillCatalogOptions): SkillCatalog {
  const { store } = options;
  const limits: SkillLimits = { ...DEFAULT_SKILL_LIMITS, ...options.limits };
  const listeners = new Set<(tenantId: string) => void>();

  function changed(tenantId: string): void {
    for (const listener of listeners) listener(tenantId);
  }

  function get(tenantId: string, name: string): SkillDetail | undefined {
    const summary = store.get(tenantId, name);
    return summary === undefined ? undefined : { ...summary, files: store.files(tenantId, name) };
  }

  async function upload(tenantId: string, name: string, tar: Readable) {
    checkSkillName(name);
    // Directories count as entries too: twice the files bounds the parse, packageOf the files.
    const skill = await receiveUpload(
      tar,
      {
        maxBytes: limits.maxBytes,
        maxEntries: limits.maxFiles * 2,
        ...(options.spoolDir === undefined ? {} : { spoolDir: options.spoolDir }),
      },
      (entries) => packageOf(name, entries, limits),
    );
    if (skill.files.length > limits.maxFiles)
      throw new SandboxError(
        'LIMIT_EXCEEDED',
        `The package has ${skill.files.length} files, more than ${limits.maxFiles}.`,
        { data: { limit: limits.maxFiles } },
      );
    const { created } = store.put(tenantId, skill, limits.maxPerTenant);
    changed(tenantId);
    return { skill: get(tenantId, name) as SkillDetail, created };
  }

  return {
    limits,
    upload,
    get,
    summaries: (tenantId) => store.list(tenantId),
    list: (tenantId) => store.list(tenantId).map(({ name, description }) => ({ name, description })),
    load: (tenantId, name) => store.load(tenantId, name),
    delete(tenantId, name) {
      const deleted = store.delete(tenantId, name);
      if (deleted) changed(tenantId);
      return deleted;
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
