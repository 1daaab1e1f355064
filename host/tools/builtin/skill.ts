// `skill(name)` (seed 000): loads one skill of the agent's tenant's catalog. A skill is an
// instruction package, not a model-facing function: loading it returns its instructions (SKILL.md
// after the front matter) and copies its files into the workspace under `.skills/<name>/`, replaced
// whole on every load (so loading twice leaves the same tree), and the result says where they are.
// The description lists the tenant's skills, so each tenant gets its own definition
// (host/agents/skill-layers.ts re-makes it when the catalog changes); the catalog itself is the
// SkillPort, which host/skills implements over the store. Read-only for plan mode: reading a skill's
// instructions is planning, and in plan mode it copies nothing (the result says so).
// The copy is a write the service makes on its own, so it never follows a symlink (NoSymlinks): a
// `.skills` or `.skills/<name>` link planted in the workspace (`.skills -> src`) refuses the load
// (FORBIDDEN naming the link) instead of redirecting the removal and the writes elsewhere; a link
// at `.skills/<name>` itself is removed, not followed.
// The copy is a tracked mutating call where the agent keeps checkpoints (`services.checkpoints`,
// host/agents/checkpoints/): before it runs, the pre-image of every file it writes or removes (the
// files under `.skills/<name>/` now and the package's) is kept under the call's id, so a rollback
// across the load puts back the files it replaced and removes the ones it added. Links under
// `.skills/<name>/` (or that folder itself a link) are not followed by the listing and not
// restored by a rollback.
import * as v from 'valibot';
import { isSandboxError, SandboxError } from '../../errors.ts';
import type { Sandbox, SandboxFs } from '../../sandbox/types.ts';
import { defineTool } from '../define.ts';
import type { ExecContext, ToolDefinition } from '../types.ts';
import { capText, sandboxOf } from './services.ts';

/** A skill name: what `skill(name)` takes, the URL segment, and the folder in the workspace. */
export const SKILL_NAME = /^[a-z0-9-]{1,64}$/;

/** The workspace folder loaded skills are copied to, one folder per skill. */
export const SKILLS_DIR = '.skills';

/** How much of a catalog the description and an unknown-name error list. */
export const SKILL_LISTING = { entries: 100, chars: 8000, instructionChars: 100_000, files: 50 } as const;

export interface SkillEntry {
  name: string;
  description: string;
}

/** What the `skill` tool reads; host/skills implements it. */
export interface SkillPort {
  /** The tenant's skills, by name. */
  list(tenantId: string): Promise<SkillEntry[]>;
  load(
    tenantId: string,
    name: string,
  ): Promise<
    | (SkillEntry & { instructions: string; files: { path: string; mode: number; content: Uint8Array }[] })
    | undefined
  >;
}

const BASE =
  "Load one skill's instructions by name. A skill is an instruction package: loading it returns its instructions and copies its files into the workspace under .skills/<name>/ (the result says where).";

/** `- name: description` lines, at most SKILL_LISTING's, saying how many were left out. */
export function listSkills(skills: readonly SkillEntry[]): string {
  const lines: string[] = [];
  let chars = 0;
  for (const skill of skills) {
    const line = `- ${skill.name}: ${skill.description.replace(/\s+/g, ' ').slice(0, 300)}`;
    if (lines.length >= SKILL_LISTING.entries || chars + line.length > SKILL_LISTING.chars) break;
    lines.push(line);
    chars += line.length + 1;
  }
  const left = skills.length - lines.length;
  return left > 0 ? `${lines.join('\n')}\n(${left} more not listed)` : lines.join('\n');
}

const describeFor = (skills: readonly SkillEntry[] | undefined): string => {
  if (skills === undefined) return BASE;
  if (skills.length === 0) return `${BASE}\nNo skills are installed for this tenant yet.`;
  return `${BASE}\nAvailable skills:\n${listSkills(skills)}`;
};

const filesOf = (files: readonly string[]): string =>
  files.length <= SKILL_LISTING.files
    ? files.join(', ')
    : `${files.slice(0, SKILL_LISTING.files).join(', ')} and ${files.length - SKILL_LISTING.files} more`;

const tenantOf = (exec: ExecContext): string => {
  const tenantId = exec.agent.services.tenantId;
  if (typeof tenantId !== 'string')
    throw new SandboxError('SANDBOX_UNAVAILABLE', 'Skills need an agent created through the agent service.');
  return tenantId;
};

const Loaded = v.object({
  name: v.string(),
  description: v.string(),
  /** The folder its files were copied to, absolute in the sandbox. */
  path: v.string(),
  files: v.array(v.string()),
  /** False in plan mode: the files were not copied (load it again once the plan is approved). */
  copied: v.boolean(),
  instructions: v.string(),
});

/** Replaces `dir` with `files`, never through a symlink (NoSymlinks). */
async function copyInto(
  fs: SandboxFs,
  dir: string,
  files: readonly { path: string; mode: number; content: Uint8Array }[],
  signal: AbortSignal,
): Promise<void> {
  signal.throwIfAborted();
  try {
    await fs.remove(dir, { recursive: true, noSymlinks: true });
  } catch (error) {
    if (!isSandboxError(error) || error.code !== 'FILE_NOT_FOUND') throw error;
  }
  for (const file of files) {
    signal.throwIfAborted();
    await fs.writeFile(`${dir}/${file.path}`, file.content, { mode: file.mode, noSymlinks: true });
  }
}

/** The most files of an earlier copy a load lists to keep their pre-images (a package holds far fewer). */
const LISTED_MAX = 10_000;

/**
 * The regular files under `SKILLS_DIR/<name>` (relative to the workspace), links not followed (the
 * folder itself a link: none, since the load replaces the link, not what it points to); [] when absent.
 */
async function filesUnder(fs: SandboxFs, name: string): Promise<string[]> {
  const listed = await fs.list(SKILLS_DIR).catch((error: unknown) => {
    if (isSandboxError(error)) return []; // no .skills yet (or not a directory: the load refuses it)
    throw error;
  });
  if (listed.find((entry) => entry.name === name)?.type !== 'directory') return [];
  const out: string[] = [];
  const walk = async (at: string): Promise<void> => {
    let entries: Awaited<ReturnType<SandboxFs['list']>>;
    try {
      entries = await fs.list(at);
    } catch (error) {
      if (isSandboxError(error)) return; // absent, or not a directory: nothing of it to keep
      throw error;
    }
    for (const entry of entries) {
      if (out.length >= LISTED_MAX) return;
      if (entry.type === 'file') out.push(`${at}/${entry.name}`);
      else if (entry.type === 'directory') await walk(`${at}/${entry.name}`);
    }
  };
  await walk(`${SKILLS_DIR}/${name}`);
  return out;
}

/** What the skill's copy needs of the agent's checkpoints (host/agents/checkpoints/agent.ts). */
interface CopyTracker {
  begin(
    sandbox: Sandbox,
    call: { callId: string; tool: string; paths: readonly string[] },
  ): Promise<() => Promise<void>>;
}

/** copyInto(), its files checkpointed under the call's id where the agent keeps checkpoints. */
async function trackedCopy(
  exec: ExecContext,
  sandbox: Sandbox,
  name: string,
  files: readonly { path: string; mode: number; content: Uint8Array }[],
): Promise<void> {
  const dir = `${SKILLS_DIR}/${name}`;
  const tracker = exec.agent.services.checkpoints as CopyTracker | undefined;
  if (tracker === undefined) return copyInto(sandbox.fs, dir, files, exec.signal);
  const paths = [...(await filesUnder(sandbox.fs, name)), ...files.map((f) => `${dir}/${f.path}`)];
  const end = await tracker.begin(sandbox, { callId: exec.callId, tool: 'skill', paths });
  try {
    await copyInto(sandbox.fs, dir, files, exec.signal);
  } finally {
    await end();
  }
}

/**
 * The `skill` tool over `port`; its description lists `skills` (none given: it lists nothing, for a
 * registry without a tenant's catalog).
 */
export function skillTool(port: SkillPort, skills?: readonly SkillEntry[]): ToolDefinition {
  return defineTool({
    name: 'skill',
    description: describeFor(skills),
    parameters: v.object({
      name: v.pipe(v.string(), v.maxLength(200), v.description('The skill name, as listed above')),
    }),
    output: {
      schema: Loaded,
      render: (_args, value) => [
        {
          type: 'text',
          text: `${value.copied ? `Skill ${value.name} loaded; its files are in ${value.path}/` : `Skill ${value.name} read; plan mode is on, so its files were not copied to ${value.path}/ (load it again once the plan is approved)`} (${filesOf(value.files)}).\n\n${capText(value.instructions, SKILL_LISTING.instructionChars, `instructions (${value.copied ? `read ${value.path}/SKILL.md` : 'load it again after plan mode'})`)}`,
        },
      ],
    },
    isReadOnly: () => true,
    async execute(args, exec) {
      const tenantId = tenantOf(exec);
      const skill = SKILL_NAME.test(args.name) ? await port.load(tenantId, args.name) : undefined;
      if (skill === undefined) {
        const available = await port.list(tenantId);
        throw new SandboxError(
          'NOT_FOUND',
          available.length === 0
            ? `There is no skill ${JSON.stringify(args.name.slice(0, 80))}: this tenant has no skills (they are uploaded with PUT /v1/skills/:name).`
            : `There is no skill ${JSON.stringify(args.name.slice(0, 80))}. Available skills:\n${listSkills(available)}`,
          { data: { name: args.name.slice(0, 80) } },
        );
      }
      const sandbox = await sandboxOf(exec);
      const dir = `${SKILLS_DIR}/${skill.name}`;
      const copied = exec.agent.services.session?.planMode() !== true;
      if (copied) await trackedCopy(exec, sandbox, skill.name, skill.files);
      return {
        name: skill.name,
        description: skill.description,
        path: sandbox.fs.resolve(dir),
        files: skill.files.map((f) => f.path),
        instructions: skill.instructions,
        copied,
      };
    },
  });
}
