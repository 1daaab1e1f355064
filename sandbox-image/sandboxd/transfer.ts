// sandboxd's bulk transfers over streams (streams.ts): readStream sends a file's bytes in data
// frames as fast as the host's credit allows, reading ahead up to that credit; writeStream writes
// what the host sends into a fresh temporary file and renames it over the target at the end, as
// writeFile does (fsops.ts replaceFile), so a cancelled upload leaves the target as it was.
// Confinement is readRange's and writeFile's: the same openers, the same checks; no deadline of
// their own (they take as long as the host's consumer), but a cancel or a new session stops them.

import { constants, promises as fsp, writev } from 'node:fs';
import { promisify } from 'node:util';
import { WireError } from '../../sandbox-wire/errors.ts';
import { DATA_HEADER_BYTES } from '../../sandbox-wire/protocol.ts';
import { intIn, replaceFile, withReadable } from './fs-access.ts';
import type { Receiver, Sender } from './streams.ts';
import { type Args, optInt, str } from './util.ts';
import type { Workspace } from './workspace.ts';

export interface TransferIo {
  sender: Sender;
  receiver: Receiver;
}

/** Reads up to `want` bytes at `position` into `buf` at `at`; fewer only at the end of the file. */
const readInto = async (
  fh: fsp.FileHandle,
  buf: Buffer,
  at: number,
  want: number,
  position: number,
): Promise<number> => {
  let got = 0;
  while (got < want) {
    const { bytesRead } = await fh.read(buf, at + got, want - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got;
};

const writevPooled = promisify(writev);

export const createTransfers = (ws: Workspace) => ({
  /** Up to `length` bytes from `offset` (fewer at the end of the file); answers the bytes sent and the size. */
  readStream(args: Args, io: TransferIo) {
    const abs = ws.resolve(str(args, 'path'));
    const offset = intIn(args, 'offset', Number.MAX_SAFE_INTEGER);
    const length = intIn(args, 'length', Number.MAX_SAFE_INTEGER);
    return withReadable(ws, abs, async (fd, { size }) => {
      // A handle of the stream's own on the same open file (/proc's link to the fd, not the path
      // again): the read-ahead below may still run when this settles, and withReadable closes fd.
      const fh = await fsp.open(`/proc/self/fd/${fd}`, constants.O_RDONLY);
      try {
        return await sendRange(fh, size);
      } finally {
        await fh.close();
      }
    });
    async function sendRange(fh: fsp.FileHandle, size: number) {
      const out = io.sender;
      let ahead = 0; // bytes of the range already asked of the file
      /** The next piece, read into its own frame within the credit. */
      const readNext = async () => {
        const want = await out.credit(length - ahead);
        const frame = out.frame(want);
        const at = offset + ahead;
        ahead += want;
        return { frame, want, got: await readInto(fh, frame, DATA_HEADER_BYTES, want, at) };
      };
      let sent = 0;
      let next = length > 0 ? readNext() : undefined;
      while (next) {
        const { frame, want, got } = await next;
        sent += got;
        // Read ahead: the next piece is on its way while this one goes out (a write to a pipe
        // blocks us until dockerd took it).
        next = got === want && ahead < length ? readNext() : undefined;
        if (got > 0) out.send(frame, got);
      }
      out.end();
      return { bytes: sent, size };
    }
  },

  /** Replaces the file at `path` with the bytes the host sends until its end; answers how many. */
  async writeStream(args: Args, io: TransferIo) {
    const abs = ws.resolve(str(args, 'path'));
    if (abs === ws.root) throw new WireError('NOT_A_FILE', `Not a file: ${abs} (it is the workspace root)`);
    const mode =
      args.mode === undefined || args.mode === null ? undefined : optInt(args, 'mode', 0o644, 0o7777);
    let bytes = 0;
    await replaceFile(ws, abs, mode, async (fd) => {
      const rx = io.receiver;
      for (;;) {
        const parts = await rx.next();
        if (parts === undefined) return;
        let n = 0;
        for (const p of parts) n += p.length;
        let written = 0;
        while (written < n) {
          const rest = written === 0 ? parts : [Buffer.concat(parts).subarray(written)];
          written += (await writevPooled(fd, rest)).bytesWritten;
        }
        bytes += n;
        rx.consumed(n);
      }
    });
    return { bytes };
  },
});
