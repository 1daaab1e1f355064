// Docker's multiplexed attach stream (each frame: a stream type byte, three zero bytes, a 4-byte
// big-endian length, then that many bytes) split into stdout and stderr. It replaces
// docker-modem's demuxStream, which copies everything buffered at every chunk (Buffer.concat plus a
// copy of the rest) and so cost the control plane about 1 s of CPU per 256 MiB sandboxd sent.
// Invariants: payload bytes are passed on as views of the socket's chunks, never copied; only a
// header split across chunks is assembled (8 bytes); like demuxStream, a header of an unknown
// stream type means the stream is not multiplexed (a TTY): from there on everything goes to stdout.

import type { Readable, Writable } from 'node:stream';

const HEADER_BYTES = 8;

export const demux = (source: Readable, stdout: Writable, stderr: Writable): void => {
  const header = Buffer.alloc(HEADER_BYTES);
  let have = 0; // header bytes gathered
  let left = 0; // payload bytes of the current frame still to come
  let target: Writable = stdout;
  let raw = false;
  const onData = (chunk: Buffer): void => {
    if (raw) {
      stdout.write(chunk);
      return;
    }
    let at = 0;
    while (at < chunk.length) {
      if (left > 0) {
        const n = Math.min(left, chunk.length - at);
        target.write(n === chunk.length ? chunk : chunk.subarray(at, at + n));
        at += n;
        left -= n;
        continue;
      }
      const n = Math.min(HEADER_BYTES - have, chunk.length - at);
      chunk.copy(header, have, at, at + n);
      have += n;
      at += n;
      if (have < HEADER_BYTES) return;
      have = 0;
      const type = header[0];
      if (type !== 0 && type !== 1 && type !== 2) {
        raw = true;
        stdout.write(Buffer.concat([header, chunk.subarray(at)]));
        return;
      }
      target = type === 2 ? stderr : stdout;
      left = header.readUInt32BE(4);
    }
  };
  source.on('data', onData);
};
