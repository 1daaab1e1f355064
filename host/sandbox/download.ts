// Downloads out of a sandbox, read only as fast as the consumer takes them: either piece by piece
// (the next piece is read when the consumer asks for it: an HTTP response asks once its socket took
// the previous one) or from a stream whose credit the consumer's pace returns (sandboxd reads ahead
// one window, never more); a consumer that stops (a client that went away) stops the reads.
// Memory per download is about two pieces or one window, whatever its size.
// A single file is promised with its length up front (Content-Length), so its content yields
// exactly that many bytes or fails: a file that grew is cut at the size it had, one that shrank
// fails the stream rather than end it early. Archives pad a shrunk file instead (tar-pack.ts).

import { SandboxError } from '../errors.ts';
import { asBuffer } from './chunks.ts';

/** Bytes per read: a sandboxd frame could carry 12 MiB, but one piece is what a download holds. */
export const DOWNLOAD_PIECE_BYTES = 1024 * 1024;
/** Largest download, one file or the files of one archive together, unless a provider says otherwise. */
export const DEFAULT_MAX_DOWNLOAD_BYTES = 1024 * 1024 * 1024;

/** Reads up to `length` bytes of a file at `offset`; fewer only at the end of the file. */
export type ReadAt = (offset: number, length: number) => Promise<Uint8Array>;

export const downloadTooLarge = (path: string, bytes: number, maxBytes: number): SandboxError =>
  new SandboxError(
    'FILE_TOO_LARGE',
    `Download of ${path} is ${bytes} bytes or more, over the ${maxBytes}-byte download limit; download a smaller part (split or compress it in the sandbox first).`,
    { data: { path, bytes, maxBytes } },
  );

/**
 * Bytes `from` to `size` of a file, one read of at most `pieceBytes` per pull. Ends early, without
 * an error, when a read comes back short: the file ended sooner (it shrank since `size` was taken).
 */
export async function* readPieces(
  read: ReadAt,
  size: number,
  from = 0,
  pieceBytes = DOWNLOAD_PIECE_BYTES,
): AsyncGenerator<Buffer> {
  for (let offset = from; offset < size; offset += pieceBytes) {
    const want = Math.min(pieceBytes, size - offset);
    const piece = asBuffer(await read(offset, want)).subarray(0, want);
    if (piece.length > 0) yield piece;
    if (piece.length < want) return;
  }
}

export interface FileDownload {
  /** The confined path. */
  path: string;
  /** Bytes `content` yields: the file's size when the download began. */
  size: number;
  content: AsyncIterable<Buffer>;
}

/** Bytes of a file from `from` to `size`, in order; fewer only when it ended sooner. */
export type PiecesFrom = (from: number, size: number) => AsyncIterable<Buffer>;

/**
 * One file's download once its size is known: FILE_TOO_LARGE over `maxBytes` (default
 * DEFAULT_MAX_DOWNLOAD_BYTES), else content that starts with `first` (bytes already read at offset
 * 0, to save a round trip) and yields exactly `size` bytes, or fails with CONFLICT when the file
 * shrank meanwhile. The rest comes from `read` one piece per pull, or from `pieces` (a stream with
 * read-ahead and flow control of its own).
 */
export const fileDownload = (
  path: string,
  size: number,
  read: ReadAt | { pieces: PiecesFrom },
  options: { first?: Buffer; maxBytes?: number } = {},
): FileDownload => {
  const rest: PiecesFrom =
    typeof read === 'function' ? (from, until) => readPieces(read, until, from) : read.pieces;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_DOWNLOAD_BYTES;
  if (size > maxBytes) throw downloadTooLarge(path, size, maxBytes);
  const first = options.first?.subarray(0, size);
  const content = async function* (): AsyncGenerator<Buffer> {
    let sent = 0;
    if (first !== undefined && first.length > 0) {
      sent = first.length;
      yield first;
    }
    if (sent < size)
      for await (const piece of rest(sent, size)) {
        const want = Math.min(piece.length, size - sent);
        if (want > 0) yield want < piece.length ? piece.subarray(0, want) : piece;
        sent += want;
      }
    if (sent < size)
      throw new SandboxError(
        'CONFLICT',
        `${path} shrank from ${size} to ${sent} bytes while it was downloaded; download it again.`,
        { data: { path, size, sent } },
      );
  };
  return { path, size, content: content() };
};
