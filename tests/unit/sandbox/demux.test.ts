// Docker's attach stream demultiplexer: frames split at every byte boundary reach stdout and stderr
// intact and in order; a stream that is not multiplexed passes through to stdout.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { demux } from '../../../host/sandbox/docker/demux.ts';

const frame = (type: number, body: string): Buffer => {
  const head = Buffer.alloc(8);
  head[0] = type;
  head.writeUInt32BE(Buffer.byteLength(body), 4);
  return Buffer.concat([head, Buffer.from(body)]);
};
const run = (chunks: Buffer[]) => {
  const source = new PassThrough();
  const out = new PassThrough();
  const err = new PassThrough();
  const got = { out: '', err: '' };
  out.on('data', (b: Buffer) => {
    got.out += b.toString();
  });
  err.on('data', (b: Buffer) => {
    got.err += b.toString();
  });
  demux(source, out, err);
  for (const c of chunks) source.emit('data', c);
  return got;
};

describe('attach demux', () => {
  const wire = Buffer.concat([frame(1, 'hello '), frame(2, 'oops'), frame(1, ''), frame(1, 'world')]);
  it('splits stdout and stderr, whatever the chunking', () => {
    for (let a = 0; a <= wire.length; a++)
      for (let b = a; b <= wire.length; b += 3)
        expect(run([wire.subarray(0, a), wire.subarray(a, b), wire.subarray(b)])).toEqual({
          out: 'hello world',
          err: 'oops',
        });
  });
  it('passes a stream that is not multiplexed through to stdout', () => {
    expect(run([Buffer.from('plain tty output'), Buffer.from(' more')])).toEqual({
      out: 'plain tty output more',
      err: '',
    });
  });
});
