// sandboxd's file operations: readFile, writeFile, stat, list, mkdir, remove, rename. Each takes the
// raw request args, confines every path (lexically, then through workspace.real) and answers with the
// value shape that host/sandbox/sandboxd/schemas.ts expects. Semantics follow the memory provider
// (the contract suite's reference): directories report size 0, list is sorted by name, writes create
// parents and replace atomically (temp file + rename), the root can be neither removed nor renamed.
// appendFile exists for the host's chunked uploads (host/sandbox/docker/write-stream.ts): it only
// extends an existing regular file, never creates one and never follows a symlink. readRange exists
// for the host's streamed downloads (host/sandbox/download.ts): one piece at an offset plus the
// file's size, confined exactly as readFile is, not bound by the model-facing read limit, and strict
// about its arguments (a length over one frame is INVALID_ARGUMENTS, not silently cut).
// Every path is resolved by workspace.open (beneath.ts): the handler gets the parent directory as an
// fd and works on `/proc/self/fd/<dir>/<name>`, opening the final name with O_NOFOLLOW, so a symlink
// swapped in after a check is never followed out of the workspace. Only regular files are read or
// appended to: every open is O_NONBLOCK (a FIFO never blocks it) and the opened file is fstat'ed.
// Names travel in byte-names.ts form, so a name that is not UTF-8 round-trips.
// writeFile, mkdir and remove take `noSymlinks` (protocol.ts NO_SYMLINKS_VERSION): then no
// component below the root may be a symlink (beneath.ts refuses it with FORBIDDEN), for the writes
// the service makes on its own, which a link planted in the workspace must not redirect.

import { randomBytes } from 'node:crypto';
import { constants, promises as fsp, type Stats } from 'node:fs';
import { fromBytes } from '../../sandbox-wire/byte-names.ts';
import { WireError } from '../../sandbox-wire/errors.ts';
import { MAX_BINARY_BYTES } from '../../sandbox-wire/protocol.ts';
import { atFd, openSubdir, type Resolved, type ResolveOptions } from './beneath.ts';
import { type Args, bool, optInt, str, toWireError } from './util.ts';
import { READ_FLAGS, type Workspace } from './workspace.ts';

type FileType = 'file' | 'directory' | 'symlink' | 'other';

export const typeOf = (
  s: Stats | { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean },
): FileType =>
  s.isFile() ? 'file' : s.isDirectory() ? 'directory' : s.isSymbolicLink() ? 'symlink' : 'other';

/** The stat answer for lexical `abs` from the stats of what it names (a directory's size is 0). */
const statAnswer = (abs: string, st: Stats) => {
  const type = typeOf(st);
  return {
    path: abs,
    type,
    size: type === 'directory' ? 0 : st.size,
    mtimeMs: st.mtimeMs,
    mode: st.mode & 0o7777,
  };
};

const notFile = (path: string, what: string): WireError =>
  new WireError('NOT_A_FILE', `Not a file: ${path} (it is ${what})`, { data: { path } });
const conflict = (message: string): WireError => new WireError('CONFLICT', message);
/** writeFile's and appendFile's arguments: a confined path that is not the root, bytes, a mode. */
const writeArgs = (ws: Workspace, args: Args): { abs: string; data: Buffer; mode: number | undefined } => {
  const abs = ws.resolve(str(args, 'path'));
  if (abs === ws.root) throw notFile(abs, 'the workspace root');
  const mode =
    args.mode === undefined || args.mode === null ? undefined : optInt(args, 'mode', 0o644, 0o7777);
  return { abs, data: Buffer.from(str(args, 'data'), 'base64'), mode };
};
/** Appending: never create, never follow a symlink, never block on a FIFO. */
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** A write's temporary file: always new, never through a symlink. */
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Run `fn`, translating errno errors with the lexical path in the message. */
const at = async <T>(path: string, fn: () => Promise<T>): Promise<T> => {
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
const within = async <T>(
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
): Promise<{ fh: fsp.FileHandle; st: Stats }> => {
  // A final name swapped to a symlink between the walk and the open fails with ELOOP: walk again.
  for (let attempt = 0; ; attempt++) {
    const fh = await within(ws, abs, { followLast: true }, (r) => fsp.open(r.path, READ_FLAGS)).catch(
      (e: NodeJS.ErrnoException) => {
        if (e.code === 'ELOOP' && attempt < 3) return undefined;
        if (e.code === 'ENXIO') throw notFile(abs, 'a socket or device');
        throw e;
      },
    );
    if (!fh) continue;
    try {
      const st = await fh.stat();
      if (st.isDirectory() && !directories) throw notFile(abs, 'a directory');
      if (!st.isFile() && !st.isDirectory()) throw notFile(abs, 'not a regular file');
      return { fh, st };
    } catch (e) {
      await fh.close();
      throw e;
    }
  }
};

/** Runs `fn` on the regular file at lexical `abs` (or a directory, with `directories`), opened for reading (openRegular). */
export const withReadable = <T>(
  ws: Workspace,
  abs: string,
  fn: (fh: fsp.FileHandle, st: Stats) => Promise<T>,
  directories = false,
): Promise<T> =>
  at(abs, async () => {
    const { fh, st } = await openRegular(ws, abs, directories);
    try {
      return await fn(fh, st);
    } finally {
      await fh.close();
    }
  });

/** Removes the directory `name` in open directory `parent` and everything in it, one fd per level, never following a symlink. */
const removeTree = async (parent: number, name: Buffer): Promise<void> => {
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
const readAt = async (fh: fsp.FileHandle, offset: number, want: number): Promise<Buffer> => {
  const buf = Buffer.alloc(want);
  let got = 0;
  while (got < want) {
    const { bytesRead } = await fh.read(buf, got, want - got, offset + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
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
  fill: (fh: fsp.FileHandle) => Promise<unknown>,
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
      const existing = await fsp.lstat(r.path).catch(() => undefined);
      if (existing?.isDirectory()) throw notFile(abs, 'a directory');
      const tmp = atFd(
        r.dir.fd,
        Buffer.concat([
          Buffer.from('.'),
          r.name.subarray(0, 200),
          Buffer.from(`.${randomBytes(6).toString('hex')}.sandboxd-tmp`),
        ]),
      );
      const fh = await fsp.open(tmp, CREATE_FLAGS, 0o600);
      try {
        await fill(fh);
        await fh.chmod(mode ?? (existing?.isFile() ? existing.mode & 0o7777 : 0o644));
        await fh.close();
        await fsp.rename(tmp, r.path);
      } catch (e) {
        await fh.close().catch(() => {});
        await fsp.unlink(tmp).catch(() => {});
        throw e;
      }
    } finally {
      await r.close().catch(() => {});
    }
  });

export const createFsOps = (ws: Workspace) => ({
  async readFile(args: Args) {
    const abs = ws.resolve(str(args, 'path'));
    const offset = optInt(args, 'offset', 0);
    const maxBytes = optInt(args, 'maxBytes', MAX_BINARY_BYTES, MAX_BINARY_BYTES);
    const length =
      args.length === undefined || args.length === null ? undefined : optInt(args, 'length', 0, maxBytes);
    // With `stat` the answer says what was opened, and a directory or a file over maxBytes is
    // answered with that alone instead of an error (the host's SandboxFs.readWithStat).
    const withStat = bool(args, 'stat');
    return withReadable(
      ws,
      abs,
      async (fh, st) => {
        const size = st.size;
        const stat = withStat ? statAnswer(abs, st) : undefined;
        const tooLarge = length === undefined && size - offset > maxBytes;
        if (stat && (st.isDirectory() || tooLarge)) return { stat };
        if (tooLarge) {
          throw new WireError(
            'FILE_TOO_LARGE',
            `${abs} is ${size} bytes, more than the ${maxBytes}-byte read limit; read it in parts with offset and length.`,
            {
              data: { path: abs, size, maxReadBytes: maxBytes },
            },
          );
        }
        const want = Math.max(0, Math.min(length ?? maxBytes, size - offset));
        const data = (await readAt(fh, offset, want)).toString('base64');
        return stat ? { data, stat } : { data };
      },
      withStat,
    );
  },

  /** `length` bytes at `offset` (fewer at the end of the file, none past it) and the file's size. */
  async readRange(args: Args) {
    const abs = ws.resolve(str(args, 'path'));
    const offset = intIn(args, 'offset', Number.MAX_SAFE_INTEGER);
    const length = intIn(args, 'length', MAX_BINARY_BYTES);
    return withReadable(ws, abs, async (fh, { size }) => {
      const data = await readAt(fh, offset, Math.max(0, Math.min(length, size - offset)));
      return { data: data.toString('base64'), size };
    });
  },

  async writeFile(args: Args) {
    const { abs, data, mode } = writeArgs(ws, args);
    await replaceFile(ws, abs, mode, (fh) => fh.writeFile(data), bool(args, 'noSymlinks'));
    return {};
  },

  /** Appends `data` to an existing regular file, then sets `mode` when given. */
  async appendFile(args: Args) {
    const { abs, data, mode } = writeArgs(ws, args);
    return at(abs, async () => {
      const fh = await within(ws, abs, { followLast: false }, (r) => fsp.open(r.path, APPEND_FLAGS)).catch(
        (e: NodeJS.ErrnoException) => {
          if (e.code === 'ELOOP') throw notFile(abs, 'a symlink');
          if (e.code === 'ENXIO') throw notFile(abs, 'a FIFO or socket');
          throw e;
        },
      );
      try {
        if (!(await fh.stat()).isFile()) throw notFile(abs, 'not a regular file');
        if (data.length > 0) await fh.appendFile(data);
        if (mode !== undefined) await fh.chmod(mode);
      } finally {
        await fh.close();
      }
      return {};
    });
  },

  async stat(args: Args) {
    const abs = ws.resolve(str(args, 'path'));
    return at(abs, async () => {
      const st = await within(ws, abs, { followLast: false }, (r) => fsp.lstat(r.path));
      return statAnswer(abs, st);
    });
  },

  async list(args: Args) {
    const abs = ws.resolve(str(args, 'path'));
    return at(abs, () =>
      within(ws, abs, { followLast: true }, async (r) => {
        const dir = await openSubdir(r.dir.fd, r.name).catch((e: NodeJS.ErrnoException) => {
          if (e.code === 'ENOTDIR' || e.code === 'ELOOP')
            throw new WireError('NOT_A_DIRECTORY', `Not a directory: ${abs}`, { data: { path: abs } });
          throw e;
        });
        try {
          const dirents = await fsp.readdir(atFd(dir.fd, ''), { withFileTypes: true, encoding: 'buffer' });
          const entries = await Promise.all(
            dirents.map(async (d) => {
              const type = typeOf(d);
              const size =
                type === 'file'
                  ? await fsp.lstat(atFd(dir.fd, d.name)).then(
                      (s) => s.size,
                      () => 0,
                    )
                  : 0;
              return { name: fromBytes(d.name), type, size };
            }),
          );
          return { entries: entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) };
        } finally {
          await dir.close();
        }
      }),
    );
  },

  async mkdir(args: Args) {
    const abs = ws.resolve(str(args, 'path'));
    const recursive = bool(args, 'recursive');
    return at(abs, async () => {
      const r = await ws
        .open(abs, { followLast: true, create: recursive, noSymlinks: bool(args, 'noSymlinks') })
        .catch((e: NodeJS.ErrnoException) => {
          if (e.code === 'ENOTDIR' || e.code === 'EEXIST')
            throw new WireError('NOT_A_DIRECTORY', `Not a directory: ${abs} (a file is in the way)`, {
              data: { path: abs },
            });
          throw e;
        });
      try {
        await fsp.mkdir(r.path, 0o755);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EEXIST' && (await fsp.lstat(r.path)).isDirectory()) return {};
        if (code === 'EEXIST' || code === 'ENOTDIR')
          throw new WireError('NOT_A_DIRECTORY', `Not a directory: ${abs} (a file is in the way)`, {
            data: { path: abs },
          });
        throw e;
      } finally {
        await r.close().catch(() => {});
      }
      return {};
    });
  },

  async remove(args: Args) {
    const abs = ws.resolve(str(args, 'path'));
    if (abs === ws.root)
      throw conflict('The workspace root cannot be removed; remove the entries inside it instead.');
    // The final name is never followed: a symlink there is removed itself.
    const options = { followLast: false, noSymlinks: bool(args, 'noSymlinks') };
    return at(abs, () =>
      within(ws, abs, options, async (r) => {
        const st = await fsp.lstat(r.path);
        if (!st.isDirectory()) await fsp.unlink(r.path);
        else if (bool(args, 'recursive')) await removeTree(r.dir.fd, r.name);
        else {
          try {
            await fsp.rmdir(r.path);
          } catch (e) {
            const code = (e as NodeJS.ErrnoException).code;
            if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
            throw new WireError(
              'DIRECTORY_NOT_EMPTY',
              `Directory not empty: ${abs}; pass recursive to remove it with its contents.`,
              { data: { path: abs } },
            );
          }
        }
        return {};
      }),
    );
  },

  async rename(args: Args) {
    const from = ws.resolve(str(args, 'from'));
    const to = ws.resolve(str(args, 'to'));
    if (from === ws.root || to === ws.root)
      throw conflict('The workspace root cannot be renamed or replaced.');
    if (to.startsWith(`${from}/`)) throw conflict(`Cannot move ${from} into itself (${to}).`);
    return at(from, () =>
      within(ws, from, { followLast: false }, async (src) => {
        await fsp.lstat(src.path);
        return within(ws, to, { followLast: false }, async (dst) => {
          try {
            await fsp.rename(src.path, dst.path);
          } catch (e) {
            const code = (e as NodeJS.ErrnoException).code;
            if (code === 'ENOTEMPTY' || code === 'EEXIST')
              throw new WireError('DIRECTORY_NOT_EMPTY', `Cannot replace directory ${to}: it is not empty.`, {
                data: { path: to },
              });
            if (code === 'EISDIR') throw notFile(to, 'a directory');
            throw toWireError(e, to);
          }
          return {};
        });
      }),
    );
  },
});
