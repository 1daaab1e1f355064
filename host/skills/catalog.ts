// A tenant's skill catalog as the API and the `skill` tool use it: uploads (a tar, validated whole
// by host/sandbox/tar.ts's hostile-archive checks before anything is kept, then by package.ts),
// listing, reading, deleting, over the durable SkillStore. Invariants: every operation takes the
// tenant; listeners hear of a change after it is stored, and an upload or delete answers only once
// they are done (they may be async), so a tool made then lists the new catalog.
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
  summaries(tenantId: string): Promise<SkillSummary[]>;
  get(tenantId: string, name: string): Promise<SkillDetail | undefined>;
  /** False when the tenant has no such skill. */
  delete(tenantId: string, name: string): Promise<boolean>;
  /** Told the tenant whose catalog changed (and awaited); returns the unsubscriber. */
  onChange(listener: (tenantId: string) => void | Promise<void>): () => void;
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
  const listeners = new Set<(tenantId: string) => void | Promise<void>>();

  async function changed(tenantId: string): Promise<void> {
    for (const listener of listeners) await listener(tenantId);
  }

  async function get(tenantId: string, name: string): Promise<SkillDetail | undefined> {
    const summary = await store.get(tenantId, name);
    return summary === undefined ? undefined : { ...summary, files: await store.files(tenantId, name) };
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
    const { created } = await store.put(tenantId, skill, limits.maxPerTenant);
    await changed(tenantId);
    return { skill: (await get(tenantId, name)) as SkillDetail, created };
  }

  return {
    limits,
    upload,
    get,
    summaries: (tenantId) => store.list(tenantId),
    list: async (tenantId) =>
      (await store.list(tenantId)).map(({ name, description }) => ({ name, description })),
    load: (tenantId, name) => store.load(tenantId, name),
    async delete(tenantId, name) {
      const deleted = await store.delete(tenantId, name);
      if (deleted) await changed(tenantId);
      return deleted;
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
