// `skill(name)` (seed 000): loads one skill of the agent's tenant's catalog. A skill is an
// instruction package, not a model-facing function: loading it returns its instructions (SKILL.md
// after the front matter) and copies its files into the workspace under `.skills/<name>/`, replaced
// whole on every load (so loading twice leaves the same tree), and the result says where they are.
// The description lists the tenant's skills, so each tenant gets its own definition
// (host/agents/skill-layers.ts re-makes it when the catalog changes); the catalog itself is the
// SkillPort, which host/skills implements over the store. Read-only for plan mode: the one place it
// writes is the catalog's own copy in `.skills/`, and reading a skill's instructions is planning.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
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
  list(tenantId: string): SkillEntry[];
  load(
    tenantId: string,
    name: string,
  ):
    | (SkillEntry & { instructions: string; files: { path: string; mode: number; content: Uint8Array }[] })
    | undefined;
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
  instructions: v.string(),
});

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
          text: `Skill ${value.name} loaded; its files are in ${value.path}/ (${filesOf(value.files)}).\n\n${capText(value.instructions, SKILL_LISTING.instructionChars, `instructions (read ${value.path}/SKILL.md)`)}`,
        },
      ],
    },
    isReadOnly: () => true,
    async execute(args, exec) {
      const tenantId = tenantOf(exec);
      const skill = SKILL_NAME.test(args.name) ? port.load(tenantId, args.name) : undefined;
      if (skill === undefined) {
        const available = port.list(tenantId);
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
      exec.signal.throwIfAborted();
      if (await sandbox.fs.exists(dir)) await sandbox.fs.remove(dir, { recursive: true });
      for (const file of skill.files) {
        exec.signal.throwIfAborted();
        await sandbox.fs.writeFile(`${dir}/${file.path}`, file.content, { mode: file.mode });
      }
      return {
        name: skill.name,
        description: skill.description,
        path: sandbox.fs.resolve(dir),
        files: skill.files.map((f) => f.path),
        instructions: skill.instructions,
      };
    },
  });
}
