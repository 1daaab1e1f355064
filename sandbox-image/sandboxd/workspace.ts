// The workspace root as sandboxd sees it, and the confinement every handler applies: lexical
// (paths.ts `confine`, the same rule the host applies before sending), then on disk. File
// operations resolve on disk with `open()` (beneath.ts: component by component through directory
// fds, so a symlink swapped in between a check and a use cannot redirect them). `real()` is the
// older check-then-use resolution (realpath, then a path), kept only for a spawned process's cwd,
// which the process itself re-resolves anyway.
// Invariant: a file operation only touches what `open()` resolved: a directory fd inside the root
// and a name in it. Inside a container this is defence in depth (the container's own root is the
// real boundary, and sandboxd may run as another uid than the agent); run locally it is the only
// boundary.

import { constants, promises as fsp, realpathSync } from 'node:fs';
import { posix } from 'node:path';
import { WireError } from '../../sandbox-wire/errors.ts';
import { confine, isInside, normaliseRoot } from '../../sandbox-wire/paths.ts';
import { createBeneath, type Resolved, type ResolveOptions } from './beneath.ts';

export interface Workspace {
  /** Lexical root, as the host knows it. */
  root: string;
  /** realpath(root). */
  realRoot: string;
  /** Lexical confinement; throws PATH_OUTSIDE_WORKSPACE. */
  resolve(path: string): string;
  /**
   * The on-disk path for lexical `abs`, with symlinks resolved (all of them when `followLast`,
   * else all but the last component) and proven to lie inside the root.
   */
  real(abs: string, followLast: boolean): Promise<string>;
  /**
   * Lexical `abs` resolved beneath the root without races: its parent directory, open, and its final
   * name (beneath.ts). Symlinks are followed only inside the root; the caller closes the result.
   */
  open(abs: string, options: ResolveOptions): Promise<Resolved>;
}

const escapes = (path: string, root: string): WireError =>
  new WireError(
    'PATH_OUTSIDE_WORKSPACE',
    `Path ${JSON.stringify(path)} leads outside the workspace ${root} through a symlink; use a path inside ${root}.`,
    {
      data: { path, root },
    },
  );

export const openWorkspace = async (rootPath: string): Promise<Workspace> => {
  const root = normaliseRoot(rootPath);
  const realRoot = await fsp.realpath(root);

  // realpath of the longest existing prefix, plus the missing tail (which holds no symlink).
  const realOf = async (abs: string): Promise<string> => {
    let head = abs;
    let tail = '';
    for (;;) {
      try {
        // Synchronous, as every path call of sandboxd's (fs-access.ts): a cached lookup, no pool trip.
        const r = realpathSync.native(head);
        return tail ? posix.join(r, tail) : r;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if ((code !== 'ENOENT' && code !== 'ENOTDIR') || head === '/' || head === root) throw e;
        tail = tail ? posix.join(posix.basename(head), tail) : posix.basename(head);
        head = posix.dirname(head);
      }
    }
  };

  const beneath = createBeneath(realRoot, [root], (path) => escapes(path, root));

  return {
    root,
    realRoot,
    open: (abs, options) => beneath.resolve(root, abs, options),
    resolve: (path) => confine(root, path),
    async real(abs, followLast) {
      if (abs === root) return realRoot;
      const real = followLast
        ? await realOf(abs)
        : posix.join(await realOf(posix.dirname(abs)), posix.basename(abs));
      if (!isInside(realRoot, real)) throw escapes(abs, root);
      return real;
    },
  };
};

/** Open flags for reading a file we have already resolved: never follow, never block on a FIFO. */
export const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
