// Write scopes of team tasks: what a scope may be, its normal form, and whether a path lies in it.
// A scope is a path relative to the workspace (or absolute inside it) with optional glob syntax
// (sandbox-wire/glob.ts: `*` within a name, `**` any depth, `?`, `[ab]`, `{a,b}`). Without glob
// characters it covers that path and everything below it (`src` covers `src/a/b.ts`); with them
// it covers the paths it matches (`src/**/*.ts`). Scopes and paths are both normalised by the
// sandbox's own path rules (sandbox-wire/paths.ts `confine`), so `..`, `.`, doubled slashes and
// absolute spellings compare as the same workspace path, and nothing outside the workspace is
// ever inside a scope. Matching is lexical; symlinks are the guard's business (guard.ts).
// Tenant patterns run on the control plane's event loop, so they compile for the linear engine.

import { globToRegExp } from '../../../sandbox-wire/glob.ts';
import { SandboxError } from '../../errors.ts';
import { confine, relativeTo, WORKSPACE_ROOT } from '../../sandbox/paths.ts';
import { hasLinearEngine, LINEAR } from '../../tools/linear-regexp.ts';

const GLOB = /[*?[{]/;

/** The workspace-relative form of `path` ('' for the root); PATH_OUTSIDE_WORKSPACE when it leaves it. */
export const workspacePath = (path: string): string =>
  relativeTo(WORKSPACE_ROOT, confine(WORKSPACE_ROOT, path));

/** The normal form of one scope; INVALID_ARGUMENTS naming it when it is empty, the root or outside. */
export const normaliseScope = (scope: string, maxChars: number): string => {
  const refuse = (why: string) =>
    new SandboxError('INVALID_ARGUMENTS', `write scope ${JSON.stringify(scope)} ${why}.`, {
      data: { scope },
    });
  if (scope.length === 0 || scope.length > maxChars) throw refuse(`must have 1 to ${maxChars} characters`);
  let relative: string;
  try {
    relative = workspacePath(scope);
  } catch {
    throw refuse(
      `leaves the workspace ${WORKSPACE_ROOT}; give a path inside it, e.g. "src/" or "docs/**/*.md"`,
    );
  }
  if (relative === '' || relative === '**')
    throw refuse('is the whole workspace, which confines nothing; leave write_scopes empty instead');
  if (GLOB.test(relative)) compile(relative);
  return relative;
};

const compiled = new Map<string, RegExp>();

const compile = (glob: string): RegExp => {
  const cached = compiled.get(glob);
  if (cached !== undefined) return cached;
  const { source } = globToRegExp(glob);
  let pattern: RegExp;
  try {
    pattern = new RegExp(source, hasLinearEngine() ? LINEAR : '');
  } catch {
    pattern = new RegExp(source);
  }
  if (compiled.size >= 4096) compiled.clear();
  compiled.set(glob, pattern);
  return pattern;
};

/** Whether the workspace-relative `path` lies in the normalised `scope`. */
export const inScope = (scope: string, path: string): boolean =>
  GLOB.test(scope) ? compile(scope).test(path) : path === scope || path.startsWith(`${scope}/`);
