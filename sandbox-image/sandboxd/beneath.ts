// Race-free path resolution beneath the workspace root, what openat2(RESOLVE_BENEATH) does, built
// from what Node has: each component is opened (O_PATH | O_NOFOLLOW) through the directory fd that
// holds it, as `/proc/self/fd/<dir>/<name>`, so a symlink or directory swapped in after a check can
// never redirect the walk. Symlinks met on the way are read and their targets walked the same way,
// component by component; `..` returns to the directory fd it came from, never above the root.
// Invariants: every fd `resolve` hands out is a directory inside the root, opened by this walk; the
// final name is handed back unopened, so the caller opens it with O_NOFOLLOW (a symlink swapped in
// at the last moment then fails with ELOOP instead of being followed); nothing here ever resolves a
// path from the filesystem root except the root itself. Paths the kernel sees are Buffers, so names
// that are not UTF-8 (byte-names.ts) work as any other.
// The walk's system calls are synchronous (openSync, lstatSync, readlinkSync, mkdirSync, closeSync): each is
// a lookup in the kernel's dentry cache taking microseconds, never a wait (O_PATH opens nothing,
// so no FIFO or device blocks it), and through Node's thread pool each cost a round trip of two
// thread wake-ups instead (~0.1-0.3 ms wall a call on a 2-core VM, several a path:
// bench/sandboxd-fs.ts). So a walk is bounded in steps too (MAX_STEPS), not only in symlinks: 40
// links whose targets each hold 800 `d/..` made 32,000 opens, one call holding sandboxd's loop
// for 100-200 ms (every other call waiting), from links any program in the sandbox can make.

import { closeSync, constants, promises as fsp, lstatSync, mkdirSync, openSync, readlinkSync } from 'node:fs';
import { posix } from 'node:path';
import { NameError, toBytes } from '../../sandbox-wire/byte-names.ts';
import { WireError } from '../../sandbox-wire/errors.ts';
import { isInside, relativeTo } from '../../sandbox-wire/paths.ts';

/** Linux's O_PATH (the same on x86-64 and arm64): not in fs.constants. */
export const O_PATH = 0o10000000;
const DIR = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** What Linux allows (MAXSYMLINKS). */
const MAX_HOPS = 40;
/**
 * The most components one walk opens or leaves (`..`): twice what a PATH_MAX path holds (2048), so
 * no path a program means reaches it; past it the walk fails as a symlink loop does (ELOOP).
 */
export const MAX_STEPS = 4096;
const DOT = Buffer.from('.');

export interface Resolved {
  /** The directory holding the final component: open (O_PATH) and inside the root. */
  dir: { readonly fd: number };
  /** The final component ('.' for the directory itself); not a symlink when resolved with followLast, as of the walk. */
  name: Buffer;
  /** `/proc/self/fd/<dir>/<name>`, for fs calls: open it with O_NOFOLLOW. */
  path: Buffer;
  close(): Promise<void>;
}

/** `/proc/self/fd/<fd>/<name>`: a path the kernel resolves from the open directory. */
export const atFd = (fd: number, name: Buffer | string): Buffer =>
  Buffer.concat([Buffer.from(`/proc/self/fd/${fd}/`), typeof name === 'string' ? toBytes(name) : name]);

/** Opens a subdirectory `name` of the open directory `fd` without following a symlink (ELOOP/ENOTDIR otherwise). */
export const openSubdir = (fd: number, name: Buffer): Promise<fsp.FileHandle> =>
  fsp.open(atFd(fd, name), DIR);

const errno = (code: string, message: string): NodeJS.ErrnoException =>
  Object.assign(new Error(`${code}: ${message}`), { code });

const split = (path: Buffer): Buffer[] => {
  const out: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= path.length; i++) {
    if (i === path.length || path[i] === 0x2f) {
      if (i > start) out.push(path.subarray(start, i));
      start = i + 1;
    }
  }
  return out;
};

const isName = (b: Buffer, s: string): boolean => b.length === s.length && b.toString('latin1') === s;

export interface ResolveOptions {
  /** Follow a symlink in the final component (inside the root only). */
  followLast: boolean;
  /** Create missing directories on the way (mode 0755), not the final component. */
  create?: boolean;
  /**
   * Refuse any symlink on the way (RESOLVE_NO_SYMLINKS), the final component's too when
   * `followLast`: for the service's own writes, which a link planted in the workspace must never
   * redirect, even to another place inside it. FORBIDDEN names the link.
   */
  noSymlinks?: boolean;
}

/**
 * The target of `name` in `dir` when it is a symlink; undefined when it is not one or does not exist.
 * An lstat first, which answers without an exception: a readlink of a plain file fails with EINVAL,
 * and a thrown error (its message and stack built) was a quarter of sandboxd's CPU in a 1 KiB read.
 */
const linkOf = (dir: number, name: Buffer): Buffer | undefined => {
  const at = atFd(dir, name);
  if (lstatSync(at, { throwIfNoEntry: false })?.isSymbolicLink() !== true) return undefined;
  try {
    // Swapped for something else since the lstat: EINVAL, and then it is not a link.
    return readlinkSync(at, { encoding: 'buffer' });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EINVAL' || code === 'ENOENT') return undefined;
    throw e;
  }
};

/**
 * The resolver for one root. `roots` are the names the root goes by (its lexical path and its real
 * path): an absolute symlink target must lie under one of them.
 */
export const createBeneath = (realRoot: string, roots: string[], escapes: (path: string) => WireError) => {
  const bases = [...new Set([realRoot, ...roots])];
  // The root's fd is opened once and kept: the root is where sandboxd was told to serve, and an fd
  // keeps meaning that directory even if a path to it were ever swapped.
  let rootFd: number | undefined;
  const openRoot = (): number => {
    rootFd ??= openSync(realRoot, O_PATH | constants.O_DIRECTORY);
    return rootFd;
  };

  /** The components of an absolute symlink target below the root, or undefined when it leaves it. */
  const underRoot = (target: Buffer): Buffer[] | undefined => {
    const lexical = posix.normalize(target.toString('latin1')); // '/' and '.' are single bytes
    for (const base of bases) {
      const b = Buffer.from(base).toString('latin1');
      if (isInside(b, lexical)) return split(Buffer.from(relativeTo(b, lexical), 'latin1'));
    }
    return undefined;
  };

  /** Resolve confined absolute `abs` (below `root`, lexically normalised) to an open parent and a name. */
  const resolve = async (root: string, abs: string, options: ResolveOptions): Promise<Resolved> => {
    let queue: Buffer[];
    try {
      queue = split(toBytes(relativeTo(root, abs)));
    } catch (e) {
      if (e instanceof NameError)
        throw new WireError('INVALID_ARGUMENTS', `Path ${JSON.stringify(abs)} is not a valid file name.`);
      throw e;
    }
    const base = openRoot();
    const stack: number[] = [base];
    const release = (fd: number): void => {
      if (fd !== base) closeSync(fd);
    };
    const closeAll = (keep?: number): void => {
      for (const fd of stack) if (fd !== keep) release(fd);
    };
    const done = (name: Buffer): Resolved => {
      const fd = stack[stack.length - 1] as number;
      closeAll(fd);
      let open = fd !== base;
      return {
        dir: { fd },
        name,
        path: atFd(fd, name),
        close: async () => {
          if (open) closeSync(fd);
          open = false;
        },
      };
    };
    let hops = 0;
    let steps = 0;
    /** Continue the walk at the target of the symlink `name`. */
    const follow = (name: Buffer, target: Buffer): void => {
      if (options.noSymlinks)
        throw new WireError(
          'FORBIDDEN',
          `Path ${JSON.stringify(abs)} goes through the symlink ${JSON.stringify(name.toString())}; this write never follows a symlink. Remove or rename the link.`,
          { data: { path: abs } },
        );
      if (++hops > MAX_HOPS) throw errno('ELOOP', 'too many levels of symbolic links');
      if (target[0] === 0x2f) {
        const rest = underRoot(target);
        if (!rest) throw escapes(abs);
        for (const fd of stack.splice(1)) release(fd);
        queue = [...rest, ...queue];
      } else queue = [...split(target), ...queue];
    };
    try {
      while (queue.length > 0) {
        const name = queue.shift() as Buffer;
        if (isName(name, '.')) continue;
        if (++steps > MAX_STEPS) throw errno('ELOOP', 'too many path components to walk');
        if (isName(name, '..')) {
          if (stack.length === 1) throw escapes(abs);
          release(stack.pop() as number);
          continue;
        }
        const top = stack[stack.length - 1] as number;
        if (queue.length === 0) {
          // The final name: handed back unopened, after following it when it is a symlink.
          const target = options.followLast ? linkOf(top, name) : undefined;
          if (target === undefined) return done(name);
          follow(name, target);
          continue;
        }
        try {
          // A directory opens as one; a symlink, a file or nothing fails, and is looked at below.
          stack.push(openSync(atFd(top, name), DIR));
          continue;
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (code === 'ENOENT' && options.create) {
            try {
              mkdirSync(atFd(top, name), 0o755);
            } catch (m) {
              if ((m as NodeJS.ErrnoException).code !== 'EEXIST') throw m;
            }
            queue.unshift(name);
            continue;
          }
          if (code !== 'ENOTDIR' && code !== 'ELOOP') throw e;
        }
        const target = linkOf(top, name);
        if (target === undefined) throw errno('ENOTDIR', 'not a directory');
        follow(name, target);
      }
      return done(DOT);
    } catch (e) {
      closeAll();
      throw e;
    }
  };

  return { resolve };
};
