// One tunnelled connection of the sandbox's proxy as a Node Duplex: what the client in the container
// sends (the stream's incoming pieces, starting with the first one the pump already read, empty
// ones skipped: sandboxd's mark that the connection arrived), and what we write back (sent within
// sandboxd's credit). Ending our side ends the stream; destroying the
// duplex before that, or with an error, abandons it (sandboxd cuts the client's connection), while
// a destroy after a clean end leaves sandboxd to flush what it holds and close gracefully.
import { Duplex } from 'node:stream';
import type { StreamHandle } from '../../sandbox/sandboxd/streams.ts';

export function tunnelDuplex(io: StreamHandle, pieces: AsyncIterator<Buffer>, first: Buffer): Duplex {
  let pending: Buffer | undefined = first;
  let reading = false;
  let ended = false;
  const duplex: Duplex = new Duplex({
    allowHalfOpen: true,
    // Room for what arrives while a write waits for credit: writev sends it as whole data frames.
    writableHighWaterMark: 1024 * 1024,
    read() {
      if (pending) {
        const piece = pending;
        pending = undefined;
        if (piece.length > 0) {
          duplex.push(piece);
          return;
        }
      }
      if (reading) return;
      reading = true;
      const next = (): void => {
        pieces.next().then(
          (r) => {
            // An empty piece is sandboxd's mark that the connection arrived: no bytes to push.
            if (!r.done && r.value.length === 0) return next();
            reading = false;
            duplex.push(r.done ? null : r.value);
          },
          (error: unknown) => duplex.destroy(error as Error),
        );
      };
      next();
    },
    write(chunk: Buffer, _encoding, callback) {
      io.write(chunk).then(() => callback(), callback);
    },
    // What queued while a write waited for credit goes out together, in whole data frames.
    writev(chunks, callback) {
      io.write(Buffer.concat(chunks.map((c) => c.chunk as Buffer))).then(() => callback(), callback);
    },
    final(callback) {
      ended = true;
      io.end().then(() => callback(), callback);
    },
    destroy(error, callback) {
      if (error || !ended) io.abandon();
      callback(error);
    },
  });
  return duplex;
}
