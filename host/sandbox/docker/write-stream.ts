// Writing one file of any length through sandboxd from a stream of bytes (uploads: a file PUT or
// one entry of an archive). Content that fits in one piece is one writeFile, which sandboxd makes
// atomic. Longer content goes to a fresh hidden name beside the target (created by writeFile,
// extended by appendFile one piece at a time, given its final mode last so that even a read-only
// mode can be written), then is renamed over the target: a failed or abandoned upload never leaves
// a half-written file where the old one was, and its temp file is removed while the session answers.
// Memory: one piece (WRITE_CHUNK_BYTES) and its base64 frame at a time, whatever the file's size.
// A sandboxd that speaks streams gets content over SMALL_WRITE_BYTES as one writeStream instead: raw
// data frames within its credit, the temporary file and the rename done by sandboxd.

import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import { SandboxError } from '../../errors.ts';
import { asBuffer, rechunk } from '../chunks.ts';
import type { SandboxdFs } from '../sandboxd/client.ts';

/** Bytes per write call: small enough that an upload's buffers stay a few MiB, large enough to stream fast. */
export const WRITE_CHUNK_BYTES = 1024 * 1024;

const EMPTY = Buffer.alloc(0);

/** Content shorter than this is one writeFile (one round trip); longer content streams. */
export const SMALL_WRITE_BYTES = 64 * 1024;

/** With a sandboxd that speaks streams: one writeFile for small content, else one writeStream. */
const streamed = async (
  fs: SandboxdFs,
  target: string,
  source: AsyncIterable<Uint8Array>,
  mode: number | undefined,
): Promise<number> => {
  const asked = mode === undefined ? {} : { mode };
  const it = source[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let held = 0;
  let next = await it.next();
  while (!next.done && held < SMALL_WRITE_BYTES) {
    const chunk = asBuffer(next.value);
    head.push(chunk);
    held += chunk.length;
    if (held < SMALL_WRITE_BYTES) next = await it.next();
  }
  if (held < SMALL_WRITE_BYTES) {
    await fs.writeFile(target, Buffer.concat(head, held), asked);
    return held;
  }
  async function* all(): AsyncGenerator<Buffer> {
    yield* head.splice(0);
    for (;;) {
      const n = await it.next();
      if (n.done) return;
      yield asBuffer(n.value);
    }
  }
  return (fs.writeStream as NonNullable<SandboxdFs['writeStream']>)(target, all(), asked);
};

/** The mode a replaced file keeps (0o644 for a new one); a directory in the way fails here, before any write. */
const modeToKeep = async (fs: SandboxdFs, target: string): Promise<number> => {
  const st = await fs.stat(target).catch((e: unknown) => {
    if (e instanceof SandboxError && e.code === 'FILE_NOT_FOUND') return undefined;
    throw e;
  });
  if (st?.type === 'directory')
    throw new SandboxError('NOT_A_FILE', `Not a file: ${target} (it is a directory)`, {
      data: { path: target },
    });
  return st?.type === 'file' ? st.mode : 0o644;
};

/**
 * Writes `source` to the confined path `target`, replacing it only once every byte arrived.
 * `mode` defaults to the replaced file's (0o644 for a new file). Resolves with the bytes written.
 */
export const writeStream = async (
  fs: SandboxdFs,
  target: string,
  source: AsyncIterable<Uint8Array>,
  options: { mode?: number; chunkBytes?: number } = {},
): Promise<number> => {
  if (fs.writeStream) return streamed(fs, target, source, options.mode);
  const size = options.chunkBytes ?? WRITE_CHUNK_BYTES;
  const asked = options.mode === undefined ? {} : { mode: options.mode };
  let temp: string | undefined;
  let mode = 0o644;
  let bytes = 0;
  try {
    for await (const piece of rechunk(source, size)) {
      if (temp !== undefined) await fs.appendFile(temp, piece);
      else if (piece.length < size) {
        // A short piece is the last one: the whole content fits in one atomic write.
        await fs.writeFile(target, piece, asked);
        return piece.length;
      } else {
        mode = options.mode ?? (await modeToKeep(fs, target));
        temp = posix.join(posix.dirname(target), `.dsh-upload-${randomBytes(8).toString('hex')}`);
        await fs.writeFile(temp, piece, { mode: 0o600 });
      }
      bytes += piece.length;
    }
    if (temp === undefined) {
      await fs.writeFile(target, EMPTY, asked);
      return 0;
    }
    await fs.appendFile(temp, EMPTY, { mode });
    await fs.rename(temp, target);
    return bytes;
  } catch (e) {
    if (temp !== undefined) await fs.remove(temp).catch(() => {});
    throw e;
  }
};
