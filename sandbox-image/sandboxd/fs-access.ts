// Safe access beneath the workspace root for sandboxd's file operations (fsops.ts) and transfers
// (transfer.ts): every path is resolved by workspace.open (beneath.ts): the handler gets the parent
// directory as an fd and works on `/proc/self/fd/<dir>/<name>`, opening the final name with
// O_NOFOLLOW, so a symlink swapped in after a check is never followed out of the workspace. Only
// regular files are read or appended to: every open is O_NONBLOCK (a FIFO never blocks it) and the
// opened file is fstat'ed. Writes replace atomically (a fresh temporary file, renamed over).
// Invariants: errno errors leave here as wire errors naming the lexical path (at()); whatever a
// helper opened is closed when it returns or throws; a failed replace leaves the old file as it was.
// System calls on a file sandboxd opened are synchronous up to SYNC_IO_BYTES a call (opens, fstat,
// small reads and writes, rename): on the workspace's local file system each takes microseconds,
// where Node's thread pool costs two thread wake-ups a call (~0.1-0.3 ms wall on a 2-core VM,
// several a request: bench/sandboxd-fs.ts). Bigger pieces go through the pool, so one large file
// never holds sandboxd's loop for long. A file is opened O_NONBLOCK, so no open waits on a FIFO.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  promises as fsp,
  fstatSync,
  lstatSync,
  openSync,
  read,
  readSync,
  renameSync,
  type Stats,
  unlinkSync,
  write,
  writeSync,
} from 'node:fs';
import { promisify } from 'node:util';
import { WireError } from '../../sandbox-wire/errors.ts';
import { atFd, openSubdir, type Resolved, type ResolveOptions } from './beneath.ts';
import { type Args, optInt, str, toWireError } from './util.ts';
import { READ_FLAGS, type Workspace } from './workspace.ts';

type FileType = 'file' | 'directory' | 'symlink' | 'other';

export const typeOf = (
  s: Stats | { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean },
): FileType =>
  s.isFile() ? 'file' : s.isDirectory() ? 'directory' : s.isSymbolicLink() ? 'symlink' : 'other';

/** The stat answer for lexical `abs` from the stats of what it names (a directory's size is 0). */
export const statAnswer = (abs: string, st: Stats) => {
  const type = typeOf(st);
  return {
    path: abs,
    type,
    size: type === 'directory' ? 0 : st.size,
    mtimeMs: st.mtimeMs,
    mode: st.mode & 0o7777,
  };
};

export const notFile = (path: string, what: string): WireError =>
  new WireError('NOT_A_FILE', `Not a file: ${path} (it is ${what})`, { data: { path } });
export const conflict = (message: string): WireError => new WireError('CONFLICT', message);
/** writeFile's and appendFile's arguments: a confined path that is not the root, bytes, a mode. */
export const writeArgs = (
  ws: Workspace,
  args: Args,
): { abs: string; data: Buffer; mode: number | undefined } => {
  const abs = ws.resolve(str(args, 'path'));
  if (abs === ws.root) throw notFile(abs, 'the workspace root');
  const mode =
    args.mode === undefined || args.mode === null ? undefined : optInt(args, 'mode', 0o644, 0o7777);
  return { abs, data: Buffer.from(str(args, 'data'), 'base64'), mode };
};
/** Appending: never create, never follow a symlink, never block on a FIFO. */
export const APPEND_FLAGS =
  constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** A write's temporary file: always new, never through a symlink. */
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** The largest piece read or written with one synchronous call; larger ones go through the thread pool. */
export const SYNC_IO_BYTES = 1024 * 1024;
const readPooled = promisify(read);
const writePooled = promisify(write);

/** Run `fn`, translating errno errors with the lexical path in the message. */
export const at = async <T>(path: string, fn: () => Promise<T>): Promise<T> => {
  try {
    return await fn();
  } catch (e) {
    throw toWireError(e, path);
  }
};

/** A required integer argument in 0..max; anything else (negative, fractional, larger) is refused. */
export const intIn = (args: Args, name: string, max: number): number => {
  const v = args[name];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max)
    throw new WireError('INVALID_ARGUMENTS', `Argument ${name} must be an integer from 0 to ${max}.`);
  return v;
};

/** Runs `fn` with `abs` resolved beneath the root (workspace.open), closing what it opened. */
export const within = async <T>(
  ws: Workspace,
  abs: string,
  options: ResolveOptions,
  fn: (r: Resolved) => Promise<T>,
): Promise<T> => {
  const r = await ws.open(abs, options);
  try {
    return await fn(r);
  } finally {
    await r.close().catch(() => {});
  }
};

/**
 * Opens the regular file at lexical `abs` for reading: symlinks are followed only while they stay
 * inside the workspace, the final name is opened without following one and without blocking, and
 * the opened file itself must be a regular file (or, with `directories`, a directory). `st` is the
 * open file's own.
 */
const openRegular = async (
  ws: Workspace,
  abs: string,
  directories: boolean,
): Promise<{ fd: number; st: Stats }> => {
  // A final name swapped to a symlink between the walk and the open fails with ELOOP: walk again.
  for (let attempt = 0; ; attempt++) {
    let fd: number;
    try {
      fd = await within(ws, abs, { followLast: true }, async (r) => openSync(r.path, READ_FLAGS));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ELOOP' && attempt < 3) continue;
      if (code === 'ENXIO') throw notFile(abs, 'a socket or device');
      throw e;
    }
    try {
      const st = fstatSync(fd);
      if (st.isDirectory() && !directories) throw notFile(abs, 'a directory');
      if (!st.isFile() && !st.isDirectory()) throw notFile(abs, 'not a regular file');
      return { fd, st };
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }
};

/**
 * Runs `fn` on the regular file at lexical `abs` (or a directory, with `directories`), opened for
 * reading (openRegular), and closes it when `fn` settles: `fn` must not leave a read of the fd
 * running then (a closed fd's number is soon another file's).
 */
export const withReadable = <T>(
  ws: Workspace,
  abs: string,
  fn: (fd: number, st: Stats) => Promise<T>,
  directories = false,
): Promise<T> =>
  at(abs, async () => {
    const { fd, st } = await openRegular(ws, abs, directories);
    try {
      return await fn(fd, st);
    } finally {
      closeSync(fd);
    }
  });

/** Removes the directory `name` in open directory `parent` and everything in it, one fd per level, never following a symlink. */
export const removeTree = async (parent: number, name: Buffer): Promise<void> => {
  const dir = await openSubdir(parent, name);
  try {
    for (const d of await fsp.readdir(atFd(dir.fd, ''), { withFileTypes: true, encoding: 'buffer' })) {
      if (d.isDirectory()) await removeTree(dir.fd, d.name);
      else
        await fsp.unlink(atFd(dir.fd, d.name)).catch(async (e: NodeJS.ErrnoException) => {
          if (e.code !== 'EISDIR') throw e;
          await removeTree(dir.fd, d.name); // became a directory meanwhile
        });
    }
  } finally {
    await dir.close();
  }
  await fsp.rmdir(atFd(parent, name));
};

const inTheWay = (abs: string): WireError =>
  new WireError('NOT_A_DIRECTORY', `Not a directory: a file is in the way of ${abs}`, {
    data: { path: abs },
  });

/** Up to `want` bytes at `offset`; fewer only at the end of the file. */
export const readAt = async (fd: number, offset: number, want: number): Promise<Buffer> => {
  const buf = Buffer.alloc(want);
  let got = 0;
  while (got < want) {
    const piece = want - got;
    const n =
      piece <= SYNC_IO_BYTES
        ? readSync(fd, buf, got, piece, offset + got)
        : (await readPooled(fd, buf, got, piece, offset + got)).bytesRead;
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
};

/** Writes all of `data` at the fd's offset (the end, for a file opened O_APPEND). */
export const writeAll = async (fd: number, data: Uint8Array): Promise<void> => {
  let done = 0;
  while (done < data.length) {
    const piece = data.subarray(done);
    done +=
      piece.length <= SYNC_IO_BYTES
        ? writeSync(fd, piece)
        : (await writePooled(fd, piece, 0, piece.length, null)).bytesWritten;
  }
};

/**
 * Replaces (or creates) the file at lexical `abs` atomically: `fill` writes a fresh temporary file
 * beside it (never an existing path, never through a symlink), which then gets `mode` (default: the
 * replaced file's, 0o644 for a new one) and is renamed over `abs`. Whatever `fill` throws (an
 * aborted transfer included) removes the temporary file and leaves `abs` as it was. With
 * `noSymlinks`, a symlink anywhere on the path (the final name included) refuses the write.
 */
export const replaceFile = (
  ws: Workspace,
  abs: string,
  mode: number | undefined,
  fill: (fd: number) => Promise<unknown>,
  noSymlinks = false,
): Promise<void> =>
  at(abs, async () => {
    const r = await ws
      .open(abs, { followLast: true, create: true, noSymlinks })
      .catch((e: NodeJS.ErrnoException) => {
        if (e.code === 'ENOTDIR' || e.code === 'EEXIST') throw inTheWay(abs);
        throw e;
      });
    try {
      let existing: Stats | undefined;
      try {
        existing = lstatSync(r.path);
      } catch {
        existing = undefined;
      }
      if (existing?.isDirectory()) throw notFile(abs, 'a directory');
      const tmp = atFd(
        r.dir.fd,
        Buffer.concat([
          Buffer.from('.'),
          r.name.subarray(0, 200),
          Buffer.from(`.${randomBytes(6).toString('hex')}.sandboxd-tmp`),
        ]),
      );
      const fd = openSync(tmp, CREATE_FLAGS, 0o600);
      let open = true;
      try {
        await fill(fd);
        fchmodSync(fd, mode ?? (existing?.isFile() ? existing.mode & 0o7777 : 0o644));
        open = false;
        closeSync(fd);
        renameSync(tmp, r.path);
      } catch (e) {
        if (open) closeSync(fd);
        try {
          unlinkSync(tmp);
        } catch {
          // already gone
        }
        throw e;
      }
    } finally {
      await r.close().catch(() => {});
    }
  });
