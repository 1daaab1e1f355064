// Host-side tar handling shared by providers: parse an upload into validated entries, and pack
// entries into a clean tar. Uploads are validated COMPLETELY before anything is written, so a hostile
// archive changes nothing. Only regular files and directories pass; links, devices, FIFOs, absolute
// names, `..` components, NUL bytes and over-long names reject the whole archive (ARCHIVE_REJECTED).
// Sizes are bounded while streaming (FILE_TOO_LARGE), never after buffering.

import { Readable } from 'node:stream';
import { extract, pack } from 'tar-stream';
import { SandboxError } from '../errors.ts';
import { safeRelativeName } from './paths.ts';
import type { SandboxFs } from './types.ts';

export interface UploadEntry {
  /** Safe relative name ('' is the target directory itself). */
  name: string;
  type: 'file' | 'directory';
  mode: number;
  /** Present for files. */
  data?: Buffer;
}

export interface UploadLimits {
  /** Total bytes of file content. Default 256 MiB. */
  maxBytes?: number;
  /** Number of entries. Default 100000. */
  maxEntries?: number;
}

export const DEFAULT_UPLOAD_MAX_BYTES = 256 * 1024 * 1024;
export const DEFAULT_UPLOAD_MAX_ENTRIES = 100_000;

const rejected = (why: string, data: Record<string, unknown> = {}): SandboxError =>
  new SandboxError(
    'ARCHIVE_REJECTED',
    `Archive rejected: ${why}. Send an uncompressed tar of regular files and directories with relative paths.`,
    { data },
  );

/** Parse and validate a whole tar stream. Rejects (and destroys the input) on the first bad entry. */
export const readUpload = async (tar: Readable, limits: UploadLimits = {}): Promise<UploadEntry[]> => {
  const maxBytes = limits.maxBytes ?? DEFAULT_UPLOAD_MAX_BYTES;
  const maxEntries = limits.maxEntries ?? DEFAULT_UPLOAD_MAX_ENTRIES;
  const ex = extract();
  const entries: UploadEntry[] = [];
  let total = 0;
  tar.on('error', (e) => ex.destroy(e));
  tar.pipe(ex);
  try {
    for await (const entry of ex) {
      const h = entry.header;
      const type = h.type ?? 'file';
      if (type !== 'file' && type !== 'directory') {
        throw rejected(
          `entry ${JSON.stringify(h.name)} is a ${type}; only files and directories are allowed`,
          { name: h.name, type },
        );
      }
      const name = safeRelativeName(h.name);
      if (name === undefined)
        throw rejected(
          `entry name ${JSON.stringify(h.name.slice(0, 200))} is absolute, contains '..' or NUL, or is too long`,
          { name: h.name },
        );
      if (type === 'file' && name === '') throw rejected('a file entry has an empty name');
      if (entries.length >= maxEntries) throw rejected(`more than ${maxEntries} entries`);
      const declared = h.size ?? 0;
      if (total + declared > maxBytes) {
        throw new SandboxError(
          'FILE_TOO_LARGE',
          `Archive content exceeds ${maxBytes} bytes; upload smaller parts.`,
          { data: { maxBytes } },
        );
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of entry as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (total + size > maxBytes)
          throw new SandboxError(
            'FILE_TOO_LARGE',
            `Archive content exceeds ${maxBytes} bytes; upload smaller parts.`,
            { data: { maxBytes } },
          );
        chunks.push(chunk);
      }
      total += size;
      const mode = (h.mode ?? (type === 'directory' ? 0o755 : 0o644)) & 0o777;
      entries.push(
        type === 'file' ? { name, type, mode, data: Buffer.concat(chunks, size) } : { name, type, mode },
      );
    }
  } catch (e) {
    tar.unpipe(ex);
    tar.destroy();
    ex.destroy();
    if (e instanceof SandboxError) throw e;
    throw rejected(`not a readable tar (${(e as Error)?.message ?? e})`, {});
  }
  return entries;
};

/**
 * Writes validated upload entries under `dir` (created when missing; an existing non-directory
 * fails with NOT_A_DIRECTORY). `writeFile` is the provider's way to write one file of any size.
 */
export const extractEntries = async (
  fs: Pick<SandboxFs, 'exists' | 'stat' | 'mkdir' | 'resolve'>,
  dir: string,
  entries: readonly UploadEntry[],
  writeFile: (target: string, data: Buffer, mode: number) => Promise<void>,
): Promise<{ files: number; bytes: number }> => {
  if ((await fs.exists(dir)) && (await fs.stat(dir)).type !== 'directory') {
    throw new SandboxError('NOT_A_DIRECTORY', `Upload target ${dir} is not a directory.`, {
      data: { path: dir },
    });
  }
  await fs.mkdir(dir, { recursive: true });
  let files = 0;
  let bytes = 0;
  for (const e of entries) {
    const target = fs.resolve(e.name === '' ? dir : `${dir}/${e.name}`);
    if (e.type === 'directory') await fs.mkdir(target, { recursive: true });
    else {
      const data = e.data ?? Buffer.alloc(0);
      await writeFile(target, data, e.mode);
      files++;
      bytes += data.length;
    }
  }
  return { files, bytes };
};

export interface PackEntry {
  /** Relative name inside the archive. */
  name: string;
  type: 'file' | 'directory';
  mode: number;
  mtimeMs?: number;
  data?: Buffer;
  /**
   * Streamed content instead of `data`: exactly `size` bytes are written (a source that ends early
   * is padded with zeros, one that runs long is cut), with backpressure, so a large file never
   * sits in memory whole.
   */
  size?: number;
  chunks?: () => AsyncIterable<Buffer>;
}

/** Writes a streamed entry's chunks into a tar entry stream, honouring backpressure. */
const writeChunks = async (
  stream: NodeJS.WritableStream,
  size: number,
  chunks: AsyncIterable<Buffer>,
): Promise<void> => {
  let written = 0;
  const put = async (chunk: Buffer): Promise<void> => {
    if (!stream.write(chunk)) await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
    written += chunk.length;
  };
  for await (const chunk of chunks) {
    if (written >= size) break;
    await put(chunk.length > size - written ? chunk.subarray(0, size - written) : chunk);
  }
  while (written < size) await put(Buffer.alloc(Math.min(64 * 1024, size - written)));
  stream.end();
};

/** Pack entries (already validated, files and directories only) into an uncompressed tar stream. */
export const packEntries = (
  source: Iterable<PackEntry> | AsyncIterable<PackEntry>,
  owner = { uid: 1000, gid: 1000 },
): Readable => {
  const p = pack();
  void (async () => {
    try {
      for await (const e of source) {
        const header = {
          name: e.name,
          type: e.type,
          mode: e.mode & 0o777,
          mtime: new Date(e.mtimeMs ?? Date.now()),
          uid: owner.uid,
          gid: owner.gid,
          size: e.type === 'file' ? (e.chunks ? (e.size ?? 0) : (e.data?.length ?? 0)) : 0,
        };
        await new Promise<void>((resolve, reject) => {
          const done = (err?: Error | null): void => (err ? reject(err) : resolve());
          if (e.type === 'file' && e.chunks) {
            const stream = p.entry(header, done) as unknown as NodeJS.WritableStream;
            writeChunks(stream, header.size, e.chunks()).catch(reject);
          } else if (e.type === 'file') p.entry(header, e.data ?? Buffer.alloc(0), done);
          else p.entry(header, done);
        });
      }
      p.finalize();
    } catch (err) {
      p.destroy(err as Error);
    }
  })();
  // tar-stream packs are streamx streams; hand out a real Node Readable.
  return Readable.from(p, { objectMode: false });
};
