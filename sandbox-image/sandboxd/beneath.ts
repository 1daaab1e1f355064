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

import { constants, promises as fsp } from 'node:fs';
import { posix } from 'node:path';
import { SandboxError } from '../../host/errors.ts';
import { NameError, toBytes } from '../../host/sandbox/byte-names.ts';
import { isInside, relativeTo } from '../../host/sandbox/paths.ts';

/** Linux's O_PATH (the same on x86-64 and arm64): not in fs.constants. */
export const O_PATH = 0o10000000;
const STEP = O_PATH | constants.O_NOFOLLOW;
const DIR = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** What Linux allows (MAXSYMLINKS). */
const MAX_HOPS = 40;
const DOT = Buffer.from('.');

export interface Resolved {
  /** The directory holding the final component: open (O_PATH) and inside the root. */
  dir: fsp.FileHandle;
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
}

/**
 * The resolver for one root. `roots` are the names the root goes by (its lexical path and its real
 * path): an absolute symlink target must lie under one of them.
 */
export const createBeneath = (realRoot: string, roots: string[], escapes: (path: string) => SandboxError) => {
  const bases = [...new Set([realRoot, ...roots])];
  const openRoot = (): Promise<fsp.FileHandle> => fsp.open(realRoot, O_PATH | constants.O_DIRECTORY);

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
        throw new SandboxError('INVALID_ARGUMENTS', `Path ${JSON.stringify(abs)} is not a valid file name.`);
      throw e;
    }
    const stack: fsp.FileHandle[] = [await openRoot()];
    const closeAll = async (keep?: fsp.FileHandle): Promise<void> => {
      for (const fh of stack) if (fh !== keep) await fh.close().catch(() => {});
    };
    const done = async (name: Buffer): Promise<Resolved> => {
      const dir = stack[stack.length - 1] as fsp.FileHandle;
      await closeAll(dir);
      return { dir, name, path: atFd(dir.fd, name), close: () => dir.close() };
    };
    let hops = 0;
    try {
      while (queue.length > 0) {
        const name = queue.shift() as Buffer;
        if (isName(name, '.')) continue;
        if (isName(name, '..')) {
          if (stack.length === 1) throw escapes(abs);
          await (stack.pop() as fsp.FileHandle).close();
          continue;
        }
        const top = stack[stack.length - 1] as fsp.FileHandle;
        const last = queue.length === 0;
        if (last && !options.followLast) return await done(name);
        let fh: fsp.FileHandle;
        try {
          fh = await fsp.open(atFd(top.fd, name), STEP);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
          if (last) return await done(name);
          if (!options.create) throw e;
          await fsp.mkdir(atFd(top.fd, name), 0o755).catch((m: NodeJS.ErrnoException) => {
            if (m.code !== 'EEXIST') throw m;
          });
          queue.unshift(name);
          continue;
        }
        let st: Awaited<ReturnType<fsp.FileHandle['stat']>>;
        try {
          st = await fh.stat();
        } catch (e) {
          await fh.close();
          throw e;
        }
        if (st.isSymbolicLink()) {
          await fh.close();
          if (++hops > MAX_HOPS) throw errno('ELOOP', 'too many levels of symbolic links');
          const target = await fsp.readlink(atFd(top.fd, name), { encoding: 'buffer' });
          if (target[0] === 0x2f) {
            const rest = underRoot(target);
            if (!rest) throw escapes(abs);
            while (stack.length > 1) await (stack.pop() as fsp.FileHandle).close();
            queue = [...rest, ...queue];
          } else queue = [...split(target), ...queue];
          continue;
        }
        if (last) {
          await fh.close();
          return await done(name);
        }
        if (!st.isDirectory()) {
          await fh.close();
          throw errno('ENOTDIR', 'not a directory');
        }
        stack.push(fh);
      }
      return await done(DOT);
    } catch (e) {
      await closeAll();
      throw e;
    }
  };

  return { resolve };
};
