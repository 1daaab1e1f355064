// A job's output, read: from an offset or its last bytes (`tail`), optionally after waiting for the
// job to end, cut to whole UTF-8 characters so a page never splits one.
// Invariants: the output file is opened as an untrusted record (job-records.ts openRecord); at
// most maxBytes (MAX_OUTPUT_BYTES at most) are read per call; `nextOffset` is where the next read
// continues, past what this one returned.
import { promises as fsp } from 'node:fs';
import { info, type JobsState, load, openRecord, paths, waitForEnd } from './job-records.ts';
import { type Args, optInt, str } from './util.ts';

export const MAX_OUTPUT_BYTES = 8 * 1024 * 1024;

/** Continuation bytes (at most 3) at the start of `buf`: where its first whole character starts. */
const utf8Start = (buf: Buffer): number => {
  let i = 0;
  while (i < 3 && i < buf.length && ((buf[i] as number) & 0xc0) === 0x80) i++;
  return i;
};

/** Longest prefix of `buf` that does not end inside a UTF-8 character. */
const utf8Prefix = (buf: Buffer): Buffer => {
  let i = buf.length;
  let back = 0;
  while (i > 0 && back < 4 && ((buf[i - 1] as number) & 0xc0) === 0x80) {
    i--;
    back++;
  }
  if (i === 0) return buf;
  const lead = buf[i - 1] as number;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return need > back + 1 ? buf.subarray(0, i - 1) : buf;
};

export async function jobOutput(s: JobsState, args: Args, signal: AbortSignal) {
  const id = str(args, 'id');
  const asked = optInt(args, 'offset', 0);
  /** With a tail, the last `tail` bytes are read instead of those from `offset`. */
  const tail = optInt(args, 'tail', 0, MAX_OUTPUT_BYTES);
  const waitMs = optInt(args, 'waitMs', 0, 60 * 60 * 1000);
  const maxBytes = optInt(args, 'maxBytes', 1024 * 1024, MAX_OUTPUT_BYTES);
  let job = await load(s, id);
  if (waitMs > 0 && !job.exit) {
    await waitForEnd(s, id, job.rec, waitMs, signal);
    job = await load(s, id);
  }
  const out = paths(s, id).out;
  const size = await fsp.stat(out).then(
    (s) => s.size,
    () => 0,
  );
  let offset = tail > 0 ? Math.max(0, size - tail) : asked;
  const want = Math.max(0, Math.min(size - offset, maxBytes));
  let data: Buffer = Buffer.alloc(0);
  if (want > 0) {
    const fh = await openRecord(out);
    try {
      const buf = Buffer.alloc(want);
      const { bytesRead } = await fh.read(buf, 0, want, offset);
      data = buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  }
  if (tail > 0 && offset > 0) {
    // Start at a character, not inside one.
    const skip = utf8Start(data);
    data = data.subarray(skip);
    offset += skip;
  }
  const truncated = size - offset > data.length;
  if (truncated) data = utf8Prefix(data);
  return {
    ...info(job),
    output: data.toString('utf8'),
    offset,
    nextOffset: offset + data.length,
    truncated,
  };
}
