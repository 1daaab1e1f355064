// The writer thread's packing (host/store/event-writer.ts): rows survive the trip through shared
// memory exactly, including when one space is reused by a smaller write after a larger one (the
// bytes of the earlier write must not leak into the later rows) and when a write outgrows it.
import { describe, expect, it } from 'vitest';
import type { QueuedRow } from '../../../host/store/event-log-port.ts';
import { type PackSpace, packRows, unpackRows } from '../../../host/store/event-writer.ts';

const row = (seq: number, data: string, extra: Partial<QueuedRow> = {}): QueuedRow => ({
  sessionId: `s${seq % 3}`,
  seq,
  at: 1_700_000_000_000 + seq,
  type: seq % 2 === 0 ? 'tool.call' : 'tool.result',
  surface: 'current',
  callId: `call_${seq}`,
  parentCallId: undefined,
  data,
  refs: undefined,
  tenantId: 't',
  bytes: Buffer.byteLength(data) + 48,
  blobs: [],
  ...extra,
});

/** Through a structured clone, as the thread receives it. */
const trip = (rows: QueuedRow[], space: PackSpace) => unpackRows(structuredClone(packRows(rows, space)));

describe('event writer packing', () => {
  it('round-trips rows exactly while reusing one space for writes of any size', () => {
    const space: PackSpace = {};
    const large = Array.from({ length: 500 }, (_, i) =>
      row(i + 1, JSON.stringify({ text: `é€😀 ${'x'.repeat(i)}` }), {
        parentCallId: i % 5 === 0 ? 'parent' : undefined,
        refs: i % 7 === 0 ? '[{"pointer":"/a","sha256":"00","bytes":1}]' : undefined,
        blobs: i === 3 ? [{ sha256: 'ab', json: '"big"', bytes: 5 }] : [],
      }),
    );
    expect(trip(large, space)).toEqual(large);
    const kept = space.bytes;
    expect(kept).toBeDefined();
    const small = [
      row(501, '{"n":1}'),
      row(502, '""', { callId: '' }),
      row(503, 'null', { callId: undefined }),
    ];
    expect(trip(small, space)).toEqual(small);
    expect(space.bytes).toBe(kept);
    // Outgrowing the space replaces it (bounded: one space per writer).
    const huge = [row(504, JSON.stringify('y'.repeat(200_000)))];
    expect(trip(huge, space)).toEqual(huge);
    expect(space.bytes).not.toBe(kept);
    expect(trip([], space)).toEqual([]);
  });

  it('does not keep a space past its retention bound', () => {
    const space: PackSpace = {};
    const rows = [row(1, JSON.stringify('z'.repeat(4 * 1024 * 1024)))];
    expect(trip(rows, space)).toEqual(rows);
    expect(space.bytes).toBeUndefined();
  });
});
