// Enforcement of write scopes: every call of an agent's scope that declares the paths it writes
// (ToolDefinition.writePaths: write, edit, str_replace_editor's create/str_replace/insert) may only
// write where the agent's write bounds (board.ts writeBounds) allow: inside the union of the scopes
// of the in_progress tasks it holds (when it holds any), and inside its own write grant and every
// ancestor's (grants.ts: what the team lead let it write, which outlives the tasks; a child inherits
// its parents'). An agent with no held scoped task and no grant anywhere above it is not confined.
// Three parts, all installed in the agent's own scope (runtime.ts), so they see the inner tools.*
// calls of run_code programs and workflows too:
// - writeScopesLoader, a tools/pre-execute listener that decides nothing: the bounds live in the
//   store, which is asynchronous, and guards are synchronous, so it loads the bounds of a call that
//   writes (one read per such call, none for the rest) before the guard stage, and the guard and
//   the wrapper below read them from there. A load that fails denies the call (the pre-execute
//   stage fails closed); a writing call whose bounds were never loaded is refused as unbounded.
// - writeScopesGuard, in the pipeline's guard stage: lexical. Each path goes through the sandbox's
//   own rules (confine: `..`, absolute spellings and paths outside the workspace cannot pass) and
//   must lie in a scope (scopes.ts) of each bound. No later policy can turn its WRITE_SCOPE denial
//   around.
// - writeScopesSymlinks, a tools/execute wrapper: a path lexically in scope may still reach
//   outside it through a symlink on the way (`src/link -> ../secrets`); before dispatch, every
//   component of the path below the workspace root that exists is stat'ed (lstat: sandboxd's stat
//   does not follow the last component) and a symlink refuses the call.
// Not confined, and said so in the tool descriptions and README: tools that declare no write
// paths (bash, jobs, terminals, remote, MCP and plugin tools): a shell can write anywhere. A
// symlink swapped in between the check and the write needs such a tool, so the same caveat holds.
import { isSandboxError } from '../../errors.ts';
import type { Sandbox } from '../../sandbox/types.ts';
import type { CallView, ExecuteWrapper, Guard, GuardDenial, PreExecuteListener } from '../../tools/hooks.ts';
import type { Disposer, ToolScope } from '../../tools/index.ts';
import { inScope, workspacePath } from './scopes.ts';
import type { HeldScopes, WriteBounds } from './types.ts';

declare module '../../tools/types.ts' {
  interface ToolServices {
    /** What bounds the agent's file writes (read from the store, once per writing call). */
    writeScopes?: () => Promise<WriteBounds>;
  }
}

const FREE: WriteBounds = { held: [], grants: [] };
/** What a writing call gets when its bounds were never loaded: nothing (fail closed). */
const UNLOADED: WriteBounds = { held: [], grants: [], broken: true };

/** The bounds writeScopesLoader read for each writing call, until the call is dropped. */
const loaded = new WeakMap<CallView, WriteBounds>();

const serviceOf = (call: CallView): (() => Promise<WriteBounds>) | undefined => {
  const bounds = call.agent.services.writeScopes as (() => Promise<WriteBounds>) | undefined;
  return typeof bounds === 'function' ? bounds : undefined;
};

const boundsOf = (call: CallView): WriteBounds =>
  serviceOf(call) === undefined ? FREE : (loaded.get(call) ?? UNLOADED);

const confines = (b: WriteBounds): boolean => b.broken === true || b.held.length > 0 || b.grants.length > 0;

const pathsOf = (call: CallView): string[] => call.definition.writePaths?.(call.arguments) ?? [];

const describeHeld = (held: HeldScopes[]): string =>
  held.map((h) => `task ${h.taskId} ("${h.subject}"): ${h.scopes.join(', ')}`).join('; ');

const describeBounds = (b: WriteBounds): string =>
  [
    ...(b.held.length === 0 ? [] : [describeHeld(b.held)]),
    ...b.grants.map(
      (g) => `${g.own ? 'your grant' : `the grant of agent ${g.agentId}`}: ${g.scopes.join(', ')}`,
    ),
  ].join('; ') || 'none';

const denial = (call: CallView, path: string, why: string, rest: string): GuardDenial => ({
  code: 'WRITE_SCOPE',
  reason: `${call.name} may not write ${JSON.stringify(path)}: ${why}. ${rest}`,
});

/** Why `relative` may not be written under `bounds`, as the second half of a denial; undefined when it may. */
const refusal = (bounds: WriteBounds, relative: string): string | undefined => {
  const within = (scopes: readonly string[]) => scopes.some((scope) => inScope(scope, relative));
  if (bounds.broken === true)
    return 'An agent above you is gone, so what you may write is unknown: no file writes.';
  const { held } = bounds;
  if (held.length > 0 && !held.some((h) => within(h.scopes)))
    return `While you hold ${held.length === 1 ? 'a task' : 'tasks'} with write scopes your file writes stay inside them (${describeHeld(held)}). Write inside a scope, or complete or release the task, or ask the team lead to widen its write_scopes.`;
  const grant = bounds.grants.find((g) => !within(g.scopes));
  if (grant === undefined) return undefined;
  return grant.own
    ? `Your team lead gave you write scopes, and your file writes stay inside them (${grant.scopes.join(', ')}) for as long as you live: releasing, completing, creating or claiming tasks does not change them. Ask the lead to reassign you a task whose write_scopes cover it.`
    : `You were started by agent ${grant.agentId}, whose writes are confined to ${grant.scopes.join(', ')}; a child writes only where its parents may.`;
};

/** Loads the bounds of a call that writes, for the guard and the wrapper; decides nothing. */
export const writeScopesLoader: PreExecuteListener = async (call) => {
  const bounds = serviceOf(call);
  if (bounds === undefined || pathsOf(call).length === 0) return undefined;
  loaded.set(call, await bounds());
  return undefined;
};

export const writeScopesGuard: Guard = (call) => {
  const paths = pathsOf(call);
  if (paths.length === 0) return undefined;
  const bounds = boundsOf(call);
  if (!confines(bounds)) return undefined;
  for (const path of paths) {
    let relative: string;
    try {
      relative = workspacePath(path);
    } catch {
      return denial(
        call,
        path,
        'it is outside the workspace',
        `Your file writes stay inside your write scopes (${describeBounds(bounds)}).`,
      );
    }
    const why = refusal(bounds, relative);
    if (why !== undefined)
      return denial(call, path, `${relative || 'the workspace root'} is outside your write scopes`, why);
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
  const bounds = boundsOf(call);
  if (!confines(bounds)) return next();
  const sandbox = await sandboxOf(call);
  if (sandbox === undefined) return next();
  for (const path of paths) {
    const link = await symlinkOn(sandbox, workspacePath(path));
    if (link !== undefined) {
      const { code, reason } = denial(
        call,
        path,
        `${link} is a symlink, which could lead outside your write scopes`,
        'Write to the path the link names instead.',
      );
      return { ok: false, error: { code, message: reason } };
    }
  }
  return next();
};

/** Installs the three parts in `scope` (an agent's own). */
export const installWriteScopes = (scope: Pick<ToolScope, 'guard' | 'on'>): Disposer[] => [
  scope.on('tools/pre-execute', writeScopesLoader),
  scope.guard(writeScopesGuard),
  scope.on('tools/execute', writeScopesSymlinks),
];
