import { describe, expect, it } from 'vitest';
import {
  encodeFrame,
  FrameDecoder,
  FrameError,
  MAX_FRAME_BYTES,
  RESYNC_MARKER,
} from '../../../sandbox-wire/protocol.ts';

const collect = () => {
  const messages: unknown[] = [];
  const errors: string[] = [];
  let resyncs = 0;
  const decoder = new FrameDecoder({
    onMessage: (m) => messages.push(m),
    onError: (e) => errors.push(e.message),
    onResync: () => resyncs++,
  });
  return { decoder, messages, errors, resyncs: () => resyncs };
};

describe('frames', () => {
  it('round-trips messages split at every byte boundary', () => {
    const a = { t: 'req', id: 1, op: 'ping', args: {} };
    const b = { t: 'res', id: 1, ok: true, value: { text: 'é✓😀', n: 0xffffff } };
    const bytes = Buffer.concat([encodeFrame(a), encodeFrame(b)]);
    const { decoder, messages, errors } = collect();
    for (const byte of bytes) decoder.push(Buffer.from([byte]));
    expect(messages).toEqual([a, b]);
    expect(errors).toEqual([]);
  });

  it('decodes a frame whose length header holds 0xFF bytes (not a resync)', () => {
    const big = { data: 'x'.repeat(0xffff - 11) };
    const frame = encodeFrame(big);
    expect(frame.subarray(2, 4)).toEqual(Buffer.from([0xff, 0xff]));
    const { decoder, messages, resyncs } = collect();
    decoder.push(frame.subarray(0, 4));
    decoder.push(frame.subarray(4));
    expect(messages).toEqual([big]);
    expect(resyncs()).toBe(0);
  });

  it('drops a partial frame at a RESYNC marker, even one split across chunks', () => {
    const partial = encodeFrame({ t: 'req', id: 7, op: 'stat', args: { path: 'x' } }).subarray(0, 10);
    const next = { t: 'hello', v: 1, session: 's' };
    const stream = Buffer.concat([partial, RESYNC_MARKER, encodeFrame(next)]);
    const { decoder, messages, errors, resyncs } = collect();
    decoder.push(stream.subarray(0, 13));
    decoder.push(stream.subarray(13, 15));
    decoder.push(stream.subarray(15));
    expect(messages).toEqual([next]);
    expect(errors).toEqual([]);
    expect(resyncs()).toBe(1);
  });

  it('treats a run of more than eight 0xFF bytes as one marker, across chunks', () => {
    const { decoder, messages, errors, resyncs } = collect();
    decoder.push(Buffer.alloc(5, 0xff));
    decoder.push(Buffer.alloc(5, 0xff));
    decoder.push(Buffer.alloc(3, 0xff));
    decoder.push(encodeFrame({ after: true }));
    expect(messages).toEqual([{ after: true }]);
    expect(errors).toEqual([]);
    expect(resyncs()).toBe(1);
  });

  it('reports garbage and oversized frames once, then skips until the next marker', () => {
    const { decoder, messages, errors } = collect();
    const tooBig = Buffer.alloc(4);
    tooBig.writeUInt32BE(MAX_FRAME_BYTES + 1);
    decoder.push(tooBig);
    decoder.push(encodeFrame({ t: 'ignored' }));
    expect(errors).toHaveLength(1);
    expect(messages).toEqual([]);
    decoder.push(Buffer.concat([RESYNC_MARKER, encodeFrame({ ok: 1 })]));
    expect(messages).toEqual([{ ok: 1 }]);

    const body = Buffer.from('not json');
    const head = Buffer.alloc(4);
    head.writeUInt32BE(body.length);
    decoder.push(Buffer.concat([head, body]));
    decoder.push(Buffer.concat([RESYNC_MARKER, encodeFrame([1, 2])]));
    expect(errors).toEqual([
      expect.stringMatching(/outside/),
      'frame is not JSON',
      'frame is not a JSON object',
    ]);
  });

  it('refuses to encode a frame over the limit', () => {
    expect(() => encodeFrame({ data: 'x'.repeat(100) }, 50)).toThrow(FrameError);
  });
});
