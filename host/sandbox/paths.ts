// The host's face of the sandbox path rules (sandbox-wire/paths.ts, which sandboxd applies too): the
// same rules, failing with the service's own errors so that the API's statuses hold: a path that
// leaves the workspace is PATH_OUTSIDE_WORKSPACE (400), a bad root CONFIG_INVALID. Every provider
// confines through here (`createResolver`, which is `SandboxFs.resolve`).

import { WireError } from '../../sandbox-wire/errors.ts';
import * as rules from '../../sandbox-wire/paths.ts';
import { messageOf, SandboxError } from '../errors.ts';
import { fromWireError } from './wire-errors.ts';

export {
  isInside,
  MAX_NAME_BYTES,
  MAX_PATH_BYTES,
  relativeTo,
  safeRelativeName,
  WORKSPACE_ROOT,
} from '../../sandbox-wire/paths.ts';

/** Normalise `root` once: absolute, no trailing slash (except `/`). Throws CONFIG_INVALID. */
export const normaliseRoot = (root: string): string => {
  try {
    return rules.normaliseRoot(root);
  } catch (e) {
    throw new SandboxError('CONFIG_INVALID', messageOf(e));
  }
};

/**
 * Resolve `path` against `root` and confine it (sandbox-wire/paths.ts `confine`). Throws
 * PATH_OUTSIDE_WORKSPACE when it leaves the root, contains NUL or is too long.
 */
export const confine = (root: string, path: string): string => {
  try {
    return rules.confine(root, path);
  } catch (e) {
    throw e instanceof WireError ? fromWireError(e) : e;
  }
};

/** A `resolve(path)` function bound to one root (what `SandboxFs.resolve` is). */
export const createResolver = (root: string): ((path: string) => string) => {
  const r = normaliseRoot(root);
  return (path) => confine(r, path);
};
