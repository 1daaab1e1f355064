// sandboxd's reading file operations: readFile, readRange, stat, list. Each takes the raw request
// args, confines every path (fs-access.ts) and answers with the value shape that
// host/sandbox/sandboxd/schemas.ts expects. Directories report size 0 and list is sorted by name
// (the memory provider's semantics). readRange exists for the host's streamed downloads
// (host/sandbox/download.ts): one piece at an offset plus the file's size, confined exactly as
// readFile is, not bound by the model-facing read limit, and strict about its arguments (a length
// over one frame is INVALID_ARGUMENTS, not silently cut). Names travel in byte-names.ts form.
import { type Dirent, promises as fsp, lstatSync } from 'node:fs';
import { fromBytes } from '../../sandbox-wire/byte-names.ts';
import { WireError } from '../../sandbox-wire/errors.ts';
import { MAX_BINARY_BYTES } from '../../sandbox-wire/protocol.ts';
import { atFd, openSubdir } from './beneath.ts';
import { at, intIn, readAt, statAnswer, typeOf, within, withReadable } from './fs-access.ts';
import { type Args, bool, optInt, str } from './util.ts';
import type { Workspace } from './workspace.ts';

export async function readFile(ws: Workspace, args: Args) {
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
    async (fd, st) => {
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
      const data = (await readAt(fd, offset, want)).toString('base64');
      return stat ? { data, stat } : { data };
    },
    withStat,
  );
}

/** `length` bytes at `offset` (fewer at the end of the file, none past it) and the file's size. */
export async function readRange(ws: Workspace, args: Args) {
  const abs = ws.resolve(str(args, 'path'));
  const offset = intIn(args, 'offset', Number.MAX_SAFE_INTEGER);
  const length = intIn(args, 'length', MAX_BINARY_BYTES);
  return withReadable(ws, abs, async (fd, { size }) => {
    const data = await readAt(fd, offset, Math.max(0, Math.min(length, size - offset)));
    return { data: data.toString('base64'), size };
  });
}

export async function stat(ws: Workspace, args: Args) {
  const abs = ws.resolve(str(args, 'path'));
  return at(abs, async () => {
    const st = await within(ws, abs, { followLast: false }, async (r) => lstatSync(r.path));
    return statAnswer(abs, st);
  });
}

export async function list(ws: Workspace, args: Args) {
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
        const entries = await entriesOf(dir.fd, dirents);
        return { entries: entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) };
      } finally {
        await dir.close();
      }
    }),
  );
}

/** How many entries list reads between two turns of the event loop: other calls wait no longer than that. */
const LIST_SLICE = 1000;

/**
 * A listing's entries: the type is the directory entry's own (readdir's), and only a file is
 * stat'ed, for its size (a directory's and a symlink's size is 0, so they need none). The stat is
 * synchronous, as sandboxd's other file calls are (fs-access.ts): through the thread pool, each
 * cost two thread wake-ups, 4/5 of a large directory's listing (bench/sandboxd-list.ts).
 */
async function entriesOf(fd: number, dirents: Dirent<Buffer>[]) {
  const entries: Array<{ name: string; type: ReturnType<typeof typeOf>; size: number }> = [];
  for (let i = 0; i < dirents.length; i++) {
    if (i > 0 && i % LIST_SLICE === 0) await new Promise(setImmediate);
    const d = dirents[i] as Dirent<Buffer>;
    const type = typeOf(d);
    entries.push({ name: fromBytes(d.name), type, size: type === 'file' ? sizeOf(atFd(fd, d.name)) : 0 });
  }
  return entries;
}

/** A file's size; 0 when it went meanwhile (or cannot be stat'ed), as a listing's race allows. */
function sizeOf(path: Buffer): number {
  try {
    return lstatSync(path).size;
  } catch {
    return 0;
  }
}
