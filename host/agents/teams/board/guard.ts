// Enforcement of write scopes: while an agent holds (in_progress) tasks with write scopes, every
// call of its scope that declares the paths it writes (ToolDefinition.writePaths: write, edit,
// str_replace_editor's create/str_replace/insert) may only write inside the union of those scopes.
// Two parts, both installed in the agent's own scope (runtime.ts), so they see the inner tools.*
// calls of run_code programs and workflows too:
// - writeScopesGuard, in the pipeline's guard stage: lexical. Each path goes through the sandbox's
//   own rules (confine: `..`, absolute spellings and paths outside the workspace cannot pass) and
//   must lie in a scope (scopes.ts). No later policy can turn its WRITE_SCOPE denial around.
// - writeScopesSymlinks, a tools/execute wrapper: a path lexically in scope may still reach
//   outside it through a symlink on the way (`src/link -> ../secrets`); before dispatch, every
//   component of the path below the workspace root that exists is stat'ed (lstat: sandboxd's stat
//   does not follow the last component) and a symlink refuses the call.
// Not confined, and said so in the tool descriptions and README: tools that declare no write
// paths (bash, jobs, terminals, remote, MCP and plugin tools): a shell can write anywhere. A
// symlink swapped in between the check and the write needs such a tool, so the same caveat holds.
// An agent holding no scoped task is not confined.
import { isSandboxError } from '../../../errors.ts';
import type { Sandbox } from '../../../sandbox/types.ts';
import type { CallView, ExecuteWrapper, Guard, GuardDenial } from '../../../tools/hooks.ts';
import type { Disposer, ToolScope } from '../../../tools/index.ts';
import { inScope, workspacePath } from './scopes.ts';
import type { HeldScopes } from './types.ts';

declare module '../../../tools/types.ts' {
  interface ToolServices {
    /** The in-progress tasks with write scopes the agent holds (asked per write; sync). */
    writeScopes?: () => HeldScopes[];
  }
}

const heldOf = (call: CallView): HeldScopes[] => {
  const held = call.agent.services.writeScopes as (() => HeldScopes[]) | undefined;
  return typeof held === 'function' ? held() : [];
};

const pathsOf = (call: CallView): string[] => call.definition.writePaths?.(call.arguments) ?? [];

const describeHeld = (held: HeldScopes[]): string =>
  held.map((h) => `task ${h.taskId} ("${h.subject}"): ${h.scopes.join(', ')}`).join('; ');

const denial = (call: CallView, path: string, held: HeldScopes[], why: string): GuardDenial => ({
  code: 'WRITE_SCOPE',
  reason: `${call.name} may not write ${JSON.stringify(path)}: ${why}. While you hold ${held.length === 1 ? 'a task' : 'tasks'} with write scopes your file writes stay inside them (${describeHeld(held)}). Write inside a scope, or complete or release the task, or ask the team lead to widen its write_scopes.`,
});

export const writeScopesGuard: Guard = (call) => {
  const paths = pathsOf(call);
  if (paths.length === 0) return undefined;
  const held = heldOf(call);
  if (held.length === 0) return undefined;
  for (const path of paths) {
    let relative: string;
    try {
      relative = workspacePath(path);
    } catch {
      return denial(call, path, held, 'it is outside the workspace');
    }
    if (!held.some((h) => h.scopes.some((scope) => inScope(scope, relative))))
      return denial(call, path, held, `${relative || 'the workspace root'} is outside your write scopes`);
  }
  return undefined;
};

const sandboxOf = async (call: CallView): Promise<Sandbox | undefined> => {
  const service = call.agent.services.sandbox as Sandbox | (() => Promise<Sandbox>) | undefined;
  return typeof service === 'function' ? service() : service;
};

/** The first existing component of `relative` (below the root) that is a symlink, if any. */
const symlinkOn = async (sandbox: Sandbox, relative: string): Promise<string | undefined> => {
  const parts = relative.split('/');
  for (let i = 1; i <= parts.length; i++) {
    const prefix = parts.slice(0, i).join('/');
    try {
      if ((await sandbox.fs.stat(prefix)).type === 'symlink') return prefix;
    } catch (error) {
      if (isSandboxError(error) && error.code === 'FILE_NOT_FOUND') return undefined; // the rest is new
      throw error;
    }
  }
  return undefined;
};

export const writeScopesSymlinks: ExecuteWrapper = async (view, next) => {
  const { call } = view;
  const paths = pathsOf(call);
  if (paths.length === 0) return next();
  const held = heldOf(call);
  if (held.length === 0) return next();
  const sandbox = await sandboxOf(call);
  if (sandbox === undefined) return next();
  for (const path of paths) {
    const link = await symlinkOn(sandbox, workspacePath(path));
    if (link !== undefined) {
      const { code, reason } = denial(
        call,
        path,
        held,
        `${link} is a symlink, which could lead outside them`,
      );
      return { ok: false, error: { code, message: reason } };
    }
  }
  return next();
};

/** Installs both parts in `scope` (an agent's own). */
export const installWriteScopes = (scope: Pick<ToolScope, 'guard' | 'on'>): Disposer[] => [
  scope.guard(writeScopesGuard),
  scope.on('tools/execute', writeScopesSymlinks),
];
