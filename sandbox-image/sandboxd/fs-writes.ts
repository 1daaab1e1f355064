// sandboxd's writing file operations: writeFile, appendFile, mkdir, remove, rename. Writes create
// parents and replace atomically (temp file + rename, fs-access.ts); the root can be neither
// removed nor renamed. appendFile exists for the host's chunked uploads
// (host/sandbox/docker/write-stream.ts): it only extends an existing regular file, never creates
// one and never follows a symlink. A directory is removed with its contents only when asked
// (recursive), one fd per level, never following a symlink.
// writeFile, mkdir and remove take `noSymlinks` (protocol.ts NO_SYMLINKS_VERSION): then no
// component below the root may be a symlink (beneath.ts refuses it with FORBIDDEN), for the writes
// the service makes on its own, which a link planted in the workspace must not redirect.
import {
  closeSync,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmdirSync,
  unlinkSync,
} from 'node:fs';
import { WireError } from '../../sandbox-wire/errors.ts';
import {
  APPEND_FLAGS,
  at,
  conflict,
  notFile,
  removeTree,
  replaceFile,
  within,
  writeAll,
  writeArgs,
} from './fs-access.ts';
import { type Args, bool, str, toWireError } from './util.ts';
import type { Workspace } from './workspace.ts';

export async function writeFile(ws: Workspace, args: Args) {
  const { abs, data, mode } = writeArgs(ws, args);
  await replaceFile(ws, abs, mode, (fd) => writeAll(fd, data), bool(args, 'noSymlinks'));
  return {};
}

/** Appends `data` to an existing regular file, then sets `mode` when given. */
export async function appendFile(ws: Workspace, args: Args) {
  const { abs, data, mode } = writeArgs(ws, args);
  return at(abs, async () => {
    const fd = await within(ws, abs, { followLast: false }, async (r) =>
      openSync(r.path, APPEND_FLAGS),
    ).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ELOOP') throw notFile(abs, 'a symlink');
      if (e.code === 'ENXIO') throw notFile(abs, 'a FIFO or socket');
      throw e;
    });
    try {
      if (!fstatSync(fd).isFile()) throw notFile(abs, 'not a regular file');
      if (data.length > 0) await writeAll(fd, data);
      if (mode !== undefined) fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
    return {};
  });
}

export async function mkdir(ws: Workspace, args: Args) {
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
      mkdirSync(r.path, 0o755);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' && lstatSync(r.path).isDirectory()) return {};
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
}

export async function remove(ws: Workspace, args: Args) {
  const abs = ws.resolve(str(args, 'path'));
  if (abs === ws.root)
    throw conflict('The workspace root cannot be removed; remove the entries inside it instead.');
  // The final name is never followed: a symlink there is removed itself.
  const options = { followLast: false, noSymlinks: bool(args, 'noSymlinks') };
  return at(abs, () =>
    within(ws, abs, options, async (r) => {
      const st = lstatSync(r.path);
      if (!st.isDirectory()) unlinkSync(r.path);
      else if (bool(args, 'recursive')) await removeTree(r.dir.fd, r.name);
      else {
        try {
          rmdirSync(r.path);
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
}

export async function rename(ws: Workspace, args: Args) {
  const from = ws.resolve(str(args, 'from'));
  const to = ws.resolve(str(args, 'to'));
  if (from === ws.root || to === ws.root) throw conflict('The workspace root cannot be renamed or replaced.');
  if (to.startsWith(`${from}/`)) throw conflict(`Cannot move ${from} into itself (${to}).`);
  return at(from, () =>
    within(ws, from, { followLast: false }, async (src) => {
      lstatSync(src.path);
      return within(ws, to, { followLast: false }, async (dst) => {
        try {
          renameSync(src.path, dst.path);
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
}
