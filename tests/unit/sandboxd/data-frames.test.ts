// The data-frame codec and flow control (sandbox-wire/protocol.ts, streams.ts): frames round-trip
// split at every byte boundary, runs of 0xFF in payloads never read as a RESYNC marker, and the
// hostile cases fail as they must: an oversized data frame, a data frame nobody expects, credit that
// is negative or too large, data past the credit, data after the end.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  encodeData,
  encodeDataParts,
  encodeFrame,
  FrameDecoder,
  type FrameError,
  MAX_DATA_BYTES,
  RESYNC_MARKER,
  stuff,
} from '../../../sandbox-wire/protocol.ts';
import {
  FlowError,
  Inbound,
  MAX_WINDOW_BYTES,
  Outbound,
  STREAM_WINDOW_BYTES,
} from '../../../sandbox-wire/streams.ts';

type Seen = { json: unknown[]; data: Array<[number, string]>; errors: string[]; resyncs: number };
const decoderFor = (seen: Seen) =>
  new FrameDecoder({
    onMessage: (m) => seen.json.push(m),
    onData: (id, payload) => seen.data.push([id, Buffer.concat(payload).toString('hex')]),
    onError: (e: FrameError) => seen.errors.push(e.message),
    onResync: () => {
      seen.resyncs++;
    },
  });
const fresh = (): Seen => ({ json: [], data: [], errors: [], resyncs: 0 });

describe('data frames', () => {
  const payloads = [
    Buffer.alloc(0),
    Buffer.from([1, 2, 3]),
    Buffer.alloc(7, 0xff),
    Buffer.alloc(8, 0xff),
    Buffer.alloc(20, 0xff),
    Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0xff]),
    Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0]),
  ];
  const wire = Buffer.concat([
    ...payloads.map((p, i) => encodeData(i + 1, p)),
    encodeFrame({ t: 'res', id: 9, ok: true, value: {} }),
    encodeData(0x7fffffff, Buffer.alloc(3, 0xff)),
  ]);

  it('never hold a run of eight 0xFF bytes, whatever they carry', () => {
    expect(wire.includes(RESYNC_MARKER)).toBe(false);
    expect(stuff(Buffer.from('plain'))).toEqual(Buffer.from('plain'));
  });

  it('are delivered as soon as their last byte arrives, even when their payload ends in 0xFF', () => {
    const seen = fresh();
    decoderFor(seen).push(encodeData(3, Buffer.alloc(6, 0xff)));
    expect(seen.data).toEqual([[3, 'ff'.repeat(6)]]);
  });

  it('round-trip with control frames, split at every byte boundary', () => {
    for (let cut = 0; cut <= wire.length; cut++) {
      const seen = fresh();
      const d = decoderFor(seen);
      d.push(wire.subarray(0, cut));
      d.push(wire.subarray(cut));
      expect(seen.errors).toEqual([]);
      expect(seen.resyncs).toBe(0);
      expect(seen.json).toEqual([{ t: 'res', id: 9, ok: true, value: {} }]);
      expect(seen.data).toEqual([
        ...payloads.map((p, i) => [i + 1, p.toString('hex')]),
        [0x7fffffff, 'ffffff'],
      ]);
    }
  });

  it('round-trip fed one byte at a time, and a real marker in between still resyncs', () => {
    const seen = fresh();
    const d = decoderFor(seen);
    const partial = encodeData(5, randomBytes(100)).subarray(0, 50);
    const all = Buffer.concat([wire, partial, RESYNC_MARKER, encodeData(6, Buffer.alloc(9, 0xff))]);
    for (const b of all) d.push(Buffer.from([b]));
    expect(seen.errors).toEqual([]);
    expect(seen.resyncs).toBe(1);
    expect(seen.data.at(-1)).toEqual([6, 'ff'.repeat(9)]);
    expect(seen.data).toHaveLength(payloads.length + 2);
  });

  it('refuses to encode more than MAX_DATA_BYTES', () => {
    expect(() => encodeData(1, Buffer.alloc(MAX_DATA_BYTES + 1))).toThrow(/data frame/);
    expect(() => encodeDataParts(1, [Buffer.alloc(MAX_DATA_BYTES), Buffer.alloc(1)])).toThrow(/data frame/);
  });

  it('from parts: the same bytes on the wire as one payload, uncopied unless a 0xFF run needs stuffing', () => {
    const ff = (n: number) => Buffer.alloc(n, 0xff);
    const cases: Array<[number, Buffer[]]> = [
      [1, [Buffer.from('abc'), Buffer.from('def')]],
      [2, []],
      [3, [ff(3), ff(3)]], // six: no stuffing
      [4, [ff(4), ff(3), Buffer.from([1])]], // seven across two parts
      [0x7fffffff, [ff(4), Buffer.from([2])]], // the id's three 0xFF and the payload's four
      [0x7fffffff, [ff(3), Buffer.from([2])]], // six with the id's: none
      [6, [Buffer.from([1]), ff(20), ff(1), Buffer.from([0, 0xff])]],
    ];
    for (const [id, parts] of cases) {
      const pieces = encodeDataParts(id, parts);
      const whole = Buffer.concat(parts);
      expect(Buffer.concat(pieces)).toEqual(encodeData(id, whole));
      const stuffed = encodeData(id, whole).length !== 10 + whole.length;
      // Unstuffed frames are the header, the parts themselves and the end byte.
      if (!stuffed) expect(pieces.slice(1, -1).every((p, i) => p === parts[i])).toBe(true);
    }
  });

  it('hands a payload over in the parts it came in, copying only parts that would keep much more alive', () => {
    const payload = randomBytes(200_000);
    const wire = encodeData(1, payload);
    // A tiny part of a big chunk (the frame's last bytes and the next frame in one chunk) is copied.
    const cuts = [60_000, 130_000, wire.length - 5];
    const chunks = [0, ...cuts].map((from, i) =>
      Buffer.concat([
        wire.subarray(from, cuts[i] ?? wire.length),
        i === 3 ? Buffer.alloc(100_000) : Buffer.alloc(0),
      ]),
    );
    const got: Buffer[][] = [];
    const d = new FrameDecoder({
      onMessage: () => {},
      onData: (_, parts) => got.push(parts),
      onError: () => {},
    });
    for (const c of chunks) d.push(c);
    expect(got).toHaveLength(1);
    const parts = got[0] as Buffer[];
    expect(Buffer.concat(parts)).toEqual(payload);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(part.buffer.byteLength).toBeLessThanOrEqual(2 * part.length);
  });

  it('an oversized data frame fails at its header, before its body is buffered', () => {
    const seen = fresh();
    const d = decoderFor(seen);
    const head = Buffer.alloc(6);
    head.writeUInt32BE(MAX_DATA_BYTES + 7, 0);
    head[4] = 0; // the data kind
    d.push(head);
    expect(seen.errors).toEqual([`data frame over ${MAX_DATA_BYTES} bytes`]);
  });

  it('a data frame is garbage to a reader that expects none, and one without a stream id too', () => {
    const errors: string[] = [];
    const d = new FrameDecoder({ onMessage: () => {}, onError: (e) => errors.push(e.message) });
    d.push(encodeData(1, Buffer.from('x')));
    expect(errors).toEqual(['unexpected data frame']);
    const seen = fresh();
    decoderFor(seen).push(Buffer.from([0, 0, 0, 3, 0, 1, 2]));
    const unended = fresh();
    decoderFor(unended).push(Buffer.from([0, 0, 0, 7, 0, 0, 0, 0, 1, 0x41, 0x42]));
    expect([...seen.errors, ...unended.errors]).toEqual([
      'data frame without a stream id or its end byte',
      'data frame without a stream id or its end byte',
    ]);
  });
});

describe('flow control', () => {
  it('a receiver refuses data past its credit and after the end, and grants in halves of its window', () => {
    const rx = new Inbound(1000);
    rx.received(600);
    expect(rx.consumed(400)).toBe(0);
    expect(rx.consumed(200)).toBe(600);
    rx.received(1000);
    expect(() => rx.received(1)).toThrow(FlowError);
    rx.end();
    expect(() => rx.received(0)).toThrow(/after the end/);
  });

  it('a sender refuses credit that is not a positive integer or exceeds the most outstanding', () => {
    const tx = new Outbound(0);
    for (const bad of [-1, 0, 1.5, Number.NaN, '5', MAX_WINDOW_BYTES + 1])
      expect(() => tx.grant(bad)).toThrow(FlowError);
    tx.grant(MAX_WINDOW_BYTES);
    expect(() => tx.grant(1)).toThrow(/outstanding/);
  });

  it('a sender waits for credit, takes at most what it asked, and fails waiters when closed', async () => {
    const tx = new Outbound(0);
    const first = tx.acquire(10);
    tx.grant(25);
    expect(await first).toBe(10);
    expect(await tx.acquire(100)).toBe(15);
    const waiting = tx.acquire(1);
    tx.close(new Error('gone'));
    await expect(waiting).rejects.toThrow('gone');
    expect(new Outbound().available).toBe(STREAM_WINDOW_BYTES);
  });
});
