// Byte-stream helpers for uploads, so that no upload is ever held whole in memory: a cap that fails
// as soon as one byte too many arrived (not after the stream ended), and a regrouping into pieces
// of a fixed size for transports that move one bounded piece per call (sandboxd frames).
// Invariant: capBytes, rechunk and regroup hold at most one piece (or one source chunk) at a time; only
// `collect` gathers a whole stream, for the memory provider.

import { SandboxError } from '../errors.ts';

/** A view of any byte chunk as a Buffer, without copying. */
export const asBuffer = (chunk: Uint8Array): Buffer =>
  Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);

/**
 * Passes `source` through, throwing `tooLarge()` (and so ending the source) as soon as more than
 * `maxBytes` have arrived.
 */
export async function* capBytes(
  source: AsyncIterable<Uint8Array>,
  maxBytes: number,
  tooLarge: () => Error,
): AsyncGenerator<Buffer> {
  let total = 0;
  for await (const chunk of source) {
    total += chunk.byteLength;
    if (total > maxBytes) throw tooLarge();
    yield asBuffer(chunk);
  }
}

/** A file upload's bytes, failing with FILE_TOO_LARGE past `maxBytes` (unchanged without one). */
export const capUpload = (
  data: AsyncIterable<Uint8Array>,
  path: string,
  maxBytes: number | undefined,
): AsyncIterable<Uint8Array> =>
  maxBytes === undefined
    ? data
    : capBytes(
        data,
        maxBytes,
        () =>
          new SandboxError('FILE_TOO_LARGE', `The upload of ${path} exceeds ${maxBytes} bytes; send less.`, {
            data: { path, maxBytes },
          }),
      );

/**
 * Regroups `source` into groups of views totalling exactly `size` bytes (only the last may be
 * shorter), without copying: what rechunk does for a consumer that takes parts (a writev).
 */
export async function* regroup(source: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Buffer[]> {
  let parts: Buffer[] = [];
  let held = 0;
  for await (const chunk of source) {
    let rest = asBuffer(chunk);
    while (held + rest.length >= size) {
      const take = size - held;
      parts.push(rest.subarray(0, take));
      rest = rest.subarray(take);
      const group = parts;
      parts = [];
      held = 0;
      yield group;
    }
    if (rest.length > 0) {
      parts.push(rest);
      held += rest.length;
    }
  }
  if (held > 0) yield parts;
}

/** Regroups `source` into pieces of exactly `size` bytes; only the last piece may be shorter. */
export async function* rechunk(source: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Buffer> {
  for await (const parts of regroup(source, size))
    yield parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}

/** Collects a (capped) stream into one Buffer: only for providers that keep files in memory anyway. */
export const collect = async (source: AsyncIterable<Uint8Array>): Promise<Buffer> => {
  const parts: Buffer[] = [];
  for await (const chunk of source) parts.push(asBuffer(chunk));
  return Buffer.concat(parts);
};
