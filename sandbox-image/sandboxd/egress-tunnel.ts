// One egress connection carried to the host (egress.ts egressAccept): every byte both ways as it
// is, nothing interpreted. Invariants: we send within the host's credit and write to the client
// only what the host sent, granting credit back as the client takes the bytes; a cancelled call
// destroys its connection; a client that vanishes ends the tunnel even while the host still has
// bytes for it.
import type { Socket } from 'node:net';
import { WireError } from '../../sandbox-wire/errors.ts';
import { DATA_HEADER_BYTES } from '../../sandbox-wire/protocol.ts';
import type { TransferIo } from './transfer.ts';

/** Carries the connection until both sides ended; answers the byte counts. */
export async function tunnel(
  socket: Socket,
  io: TransferIo,
  signal: AbortSignal,
): Promise<{ bytesIn: number; bytesOut: number }> {
  // An empty data frame first: "a connection arrived". The host asks for the next one at once
  // and times this one out on its own, whether or not its client ever sends a byte.
  io.sender.send(io.sender.frame(0), 0);
  const onAbort = (): void => {
    socket.destroy();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) onAbort();
  socket.resume();
  try {
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const both = Promise.all([upstream(socket, io), downstream(socket, io)]);
    both.catch(() => {}); // the loser of the race below
    // A client that vanishes ends the tunnel even while the host still has bytes for it.
    await Promise.race([both, closed]);
    if (signal.aborted) throw new WireError('ABORTED', 'The tunnel was cancelled.');
    return { bytesIn: socket.bytesRead, bytesOut: socket.bytesWritten };
  } finally {
    signal.removeEventListener('abort', onAbort);
    socket.destroy();
  }
}

/** Client → host, within the host's credit; ends the stream at the client's end. */
async function upstream(socket: Socket, io: TransferIo): Promise<void> {
  for await (const chunk of socket as AsyncIterable<Buffer>) {
    for (let at = 0; at < chunk.length; ) {
      const n = await io.sender.credit(chunk.length - at);
      const frame = io.sender.frame(n);
      chunk.copy(frame, DATA_HEADER_BYTES, at, at + n);
      io.sender.send(frame, n);
      at += n;
    }
  }
  io.sender.end();
}

/** Host → client, granting credit back as the client takes the bytes; ends the client's side at the host's end. */
async function downstream(socket: Socket, io: TransferIo): Promise<void> {
  for (;;) {
    const parts = await io.receiver.next();
    if (parts === undefined) break;
    let n = 0;
    for (const p of parts) {
      n += p.length;
      if (!socket.write(p))
        await new Promise<void>((resolve) => {
          const done = (): void => {
            socket.off('drain', done);
            socket.off('close', done);
            resolve();
          };
          socket.on('drain', done);
          socket.on('close', done);
        });
      if (socket.destroyed) throw new WireError('ABORTED', 'The client closed the connection.');
    }
    io.receiver.consumed(n);
  }
  socket.end();
}
