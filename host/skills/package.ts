// The skill-package format (the common one: a folder with `SKILL.md` whose YAML front matter names
// the skill and says what it is for, beside any other files) and its limits. Turns the validated
// entries of an uploaded tar into a SkillPackage the store keeps, or refuses it with a message that
// says what to fix. Front matter is read with the `yaml` library (real packages use quoted, folded
// and multi-line descriptions and keys of their own, which a two-key parser would refuse), with
// aliases off; only `name` and `description` are read, other keys are kept in SKILL.md untouched.
// `yaml` (72 modules) loads at the first package read, not with the service.
import { createHash } from 'node:crypto';
import { messageOf, SandboxError } from '../errors.ts';
import { lazyRequire } from '../lazy.ts';
import type { UploadEntry } from '../sandbox/tar.ts';
import type { SkillFile, SkillPackage } from '../store/skills.ts';
import { SKILL_NAME } from '../tools/builtin/skill.ts';

export const SKILL_FILE = 'SKILL.md';

const yaml = lazyRequire<typeof import('yaml')>('yaml');

export interface SkillLimits {
  /** Bytes of all files of one package. Default 4 MiB. */
  maxBytes: number;
  /** Files in one package. Default 256. */
  maxFiles: number;
  /** Skills one tenant may keep. Default 256. */
  maxPerTenant: number;
  /** Characters of a description. Default 1024. */
  maxDescription: number;
}

export const DEFAULT_SKILL_LIMITS: SkillLimits = {
  maxBytes: 4 * 1024 * 1024,
  maxFiles: 256,
  maxPerTenant: 256,
  maxDescription: 1024,
};

const invalid = (why: string, data: Record<string, unknown> = {}): SandboxError =>
  new SandboxError(
    'INVALID_ARGUMENTS',
    `Skill package refused: ${why}. A package is a folder with ${SKILL_FILE} starting with YAML front matter (---, name: <name>, description: <what it is for>, ---) and the instructions after it.`,
    { data },
  );

/** Refuses a name that is not [a-z0-9-]{1,64}. */
export function checkSkillName(name: string): string {
  if (!SKILL_NAME.test(name))
    throw new SandboxError(
      'INVALID_ARGUMENTS',
      `Skill name ${JSON.stringify(name.slice(0, 80))} is not valid: use 1 to 64 lowercase letters, digits and hyphens.`,
    );
  return name;
}

/** SKILL.md's front matter (name, description) and the instructions after it. */
export function parseSkillMd(
  text: string,
  limits: Pick<SkillLimits, 'maxDescription'> = DEFAULT_SKILL_LIMITS,
): { name: string; description: string; instructions: string } {
  const source = text.replace(/^\uFEFF/, '');
  const match = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(source);
  if (match === null) throw invalid(`${SKILL_FILE} does not start with front matter between --- lines`);
  let data: unknown;
  try {
    data = yaml().parse(match[1] as string, { maxAliasCount: 0, uniqueKeys: true });
  } catch (error) {
    throw invalid(`its front matter is not valid YAML (${messageOf(error).split('\n')[0]})`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw invalid('its front matter is not a mapping of keys to values');
  const { name, description } = data as { name?: unknown; description?: unknown };
  if (typeof name !== 'string') throw invalid('the front matter has no name (a string)');
  if (!SKILL_NAME.test(name))
    throw invalid(`the name ${JSON.stringify(name.slice(0, 80))} is not 1 to 64 of [a-z0-9-]`);
  if (typeof description !== 'string' || description.trim() === '')
    throw invalid('the front matter has no description (a non-empty string)');
  if (description.length > limits.maxDescription)
    throw invalid(`the description has ${description.length} characters, more than ${limits.maxDescription}`);
  return { name, description: description.trim(), instructions: source.slice(match[0].length) };
}

/**
 * Collects an upload's files into a package: SKILL.md at the archive's root, or every entry under
 * one top folder (stripped), as `tar -cf x.tar my-skill/` makes it. `name` must be the front
 * matter's. Entry names are already safe (host/sandbox/tar.ts refuses hostile ones).
 */
export async function packageOf(
  name: string,
  entries: AsyncIterable<UploadEntry>,
  limits: SkillLimits = DEFAULT_SKILL_LIMITS,
): Promise<SkillPackage> {
  const files: SkillFile[] = [];
  for await (const entry of entries) {
    if (entry.type !== 'file') {
      for await (const _ of entry.content);
      continue;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of entry.content) chunks.push(chunk);
    files.push({ path: entry.name, mode: entry.mode, content: Buffer.concat(chunks) });
  }
  const rooted = stripTopFolder(files);
  const skillMd = rooted.find((f) => f.path === SKILL_FILE);
  if (skillMd === undefined)
    throw invalid(`the archive has no ${SKILL_FILE} at its root or in its one top folder`);
  const parsed = parseSkillMd(skillMd.content.toString('utf8'), limits);
  if (parsed.name !== name)
    throw invalid(`its front matter names it ${parsed.name}, but it was uploaded as ${name}`, {
      name: parsed.name,
    });
  rooted.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const hash = createHash('sha256');
  for (const file of rooted) hash.update(`${file.path}\0${file.content.length}\0`).update(file.content);
  return {
    name,
    description: parsed.description,
    instructions: parsed.instructions,
    digest: hash.digest('hex'),
    bytes: rooted.reduce((sum, f) => sum + f.content.length, 0),
    files: rooted,
  };
}

function stripTopFolder(files: SkillFile[]): SkillFile[] {
  if (files.some((f) => f.path === SKILL_FILE)) return files;
  const tops = new Set(files.map((f) => f.path.split('/')[0]));
  if (tops.size !== 1 || files.some((f) => !f.path.includes('/'))) return files;
  const prefix = `${[...tops][0]}/`;
  return files.map((f) => ({ ...f, path: f.path.slice(prefix.length) }));
}
