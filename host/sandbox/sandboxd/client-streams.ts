// The sandboxd client's bulk transfers (SandboxdFs.readStream and writeStream), offered only when
// sandboxd's hello says it speaks streams: a file's bytes in data frames with flow control, the
// window being all the host holds. A count that disagrees with what was sent or asked for breaks
// the protocol (broken closes the connection).

import { MAX_DATA_BYTES } from '../../../sandbox-wire/protocol.ts';
import { SandboxError } from '../../errors.ts';
import { regroup } from '../chunks.ts';
import { broken, type ClientState } from './client-state.ts';

export async function* readStream(
  s: ClientState,
  path: string,
  offset: number,
  length: number,
): AsyncGenerator<Buffer> {
  const abs = s.resolve(path);
  const { io, result } = s.conn.stream('readStream', { path: abs, offset, length });
  let got = 0;
  for await (const piece of io.incoming) {
    if (piece.length === 0) continue; // a mark: no bytes
    got += piece.length;
    if (got > length) throw broken(s, 'sent more bytes than asked for');
    yield piece;
  }
  const { bytes } = await result;
  if (bytes !== got) throw broken(s, `said it sent ${bytes} bytes but sent ${got}`);
}

export async function writeStream(
  s: ClientState,
  path: string,
  source: AsyncIterable<Uint8Array>,
  opts: { mode?: number } = {},
): Promise<number> {
  const abs = s.resolve(path);
  const { io, result } = s.conn.stream('writeStream', { path: abs, mode: opts.mode });
  let sent = 0;
  try {
    // Whole data frames, however small the pieces the source (an HTTP body) comes in,
    // made of those pieces without copying them.
    for await (const parts of regroup(source, MAX_DATA_BYTES)) {
      await io.write(parts);
      for (const part of parts) sent += part.byteLength;
    }
    await io.end();
  } catch (e) {
    io.abandon();
    // sandboxd's own answer (a directory in the way, a full disk) says more than a closed stream.
    const answer = await result.then(
      () => undefined,
      (error: unknown) => error,
    );
    throw e instanceof SandboxError && e.code === 'SANDBOX_PROTOCOL' && answer ? answer : e;
  }
  const { bytes } = await result;
  if (bytes !== sent) throw broken(s, `wrote ${bytes} bytes of ${sent}`);
  return bytes;
}
