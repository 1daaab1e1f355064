// The path rules of the sandbox, applied alike by the host before it sends a path and by sandboxd
// before it touches one: POSIX, absolute, normalised, no NUL, and equal to the workspace root or below
// it. Invariant: every path a provider hands to storage, to sandboxd or to the Docker API has been
// through `confine()`. Confinement is lexical; a symlink inside the workspace is resolved by whoever
// touches the file (sandboxd, inside the container's own mount namespace), never by a host-side
// operation. Names that are not UTF-8 arrive in byte-names.ts form; lengths count their bytes.
// Failures are WireErrors (the host rethrows them as its own SandboxError: host/sandbox/paths.ts).
// Bundled into the image: runs on Node 18 and imports only node:path and this folder.

import { posix } from 'node:path';
import { byteLengthOf } from './byte-names.ts';
import { WireError } from './errors.ts';

/** Where the agent's workspace is mounted inside the sandbox. */
export const WORKSPACE_ROOT = '/workspace';

/** Longest path we accept (Linux PATH_MAX is 4096). */
export const MAX_PATH_BYTES = 4096;
/** Longest single component (Linux NAME_MAX). */
export const MAX_NAME_BYTES = 255;

const outside = (path: string, root: string, why: string): WireError =>
  new WireError(
    'PATH_OUTSIDE_WORKSPACE',
    `Path ${JSON.stringify(path)} is outside the workspace ${root} (${why}); use a path inside ${root}.`,
    {
      data: { path, root },
    },
  );

/**
 * Normalise `root` once: absolute, no trailing slash (except `/`). A root that is not an absolute
 * POSIX path is a mistake in configuration, never in a call: it throws a plain Error.
 */
export const normaliseRoot = (root: string): string => {
  if (typeof root !== 'string' || !root.startsWith('/') || root.includes('\0'))
    throw new Error(`Sandbox root must be an absolute POSIX path, got ${JSON.stringify(root)}.`);
  const n = posix.normalize(root);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
};

/** True when absolute normalised `path` is `root` or below it. */
export const isInside = (root: string, path: string): boolean =>
  path === root || root === '/' || path.startsWith(`${root}/`);

/**
 * Resolve `path` against `root` and confine it: a relative path is relative to the root, an absolute
 * one must lie inside it. Returns the normalised absolute path without a trailing slash.
 * Throws PATH_OUTSIDE_WORKSPACE when it leaves the root, contains NUL or is too long.
 */
export const confine = (root: string, path: string): string => {
  if (typeof path !== 'string') throw outside(String(path), root, 'not a string');
  if (path.includes('\0')) throw outside(path, root, 'contains a NUL byte');
  if (byteLengthOf(path) > MAX_PATH_BYTES) throw outside(path.slice(0, 64), root, 'path too long');
  const joined = path.startsWith('/') ? path : posix.join(root, path === '' ? '.' : path);
  let n = posix.normalize(joined);
  if (n.length > 1 && n.endsWith('/')) n = n.slice(0, -1);
  if (!isInside(root, n)) throw outside(path, root, 'leaves the workspace');
  for (const part of n.split('/')) {
    if (byteLengthOf(part) > MAX_NAME_BYTES)
      throw outside(path.slice(0, 64), root, 'a name is longer than 255 bytes');
  }
  return n;
};

/** Path of `abs` relative to `root` ('' for the root itself). `abs` must already be confined. */
export const relativeTo = (root: string, abs: string): string =>
  abs === root ? '' : root === '/' ? abs.slice(1) : abs.slice(root.length + 1);

/**
 * Validate a relative entry name from an archive: no absolute path, no `..` component, no NUL, no
 * over-long name. Returns the normalised relative name ('' for `.`/`./`) or undefined when hostile.
 */
export const safeRelativeName = (name: string): string | undefined => {
  if (typeof name !== 'string' || name.includes('\0') || name.startsWith('/')) return undefined;
  if (byteLengthOf(name) > MAX_PATH_BYTES) return undefined;
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  for (const p of parts) {
    if (p === '..' || byteLengthOf(p) > MAX_NAME_BYTES) return undefined;
  }
  return parts.join('/');
};
