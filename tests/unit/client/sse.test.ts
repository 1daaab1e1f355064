// The client's event-stream parser, fed as a network would: chunks cut anywhere (inside a field,
// between CR and LF), comments, multi-line data, ids that carry over, messages without data.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSseParser, readSse, type SseMessage } from '../../../client/index.ts';

const parse = (chunks: string[]): SseMessage[] => {
  const out: SseMessage[] = [];
  const parser = createSseParser((m) => out.push(m));
  for (const chunk of chunks) parser.push(chunk);
  return out;
};

const STREAM =
  ': ping\n\n' +
  'event: event\nid: 1\ndata: {"seq":1}\n\n' +
  'event: event\r\nid: 2\r\ndata: {"seq":\r\ndata: 2}\r\n\r\n' +
  'data:no space\rretry: 1500\r\r' +
  'event: empty\nid: 9\n\n' +
  'event: deleted\ndata: {"lastEventId":2}\n\n' +
  'data: never dispatched';

const EXPECTED: SseMessage[] = [
  { event: 'event', data: '{"seq":1}', id: '1' },
  { event: 'event', data: '{"seq":\n2}', id: '2' },
  { event: 'message', data: 'no space', id: '2', retry: 1500 },
  // the data-less `empty` message is not dispatched, but its id stays
  { event: 'deleted', data: '{"lastEventId":2}', id: '9' },
];

describe('server-sent events', () => {
  it('parses fields, comments, line ends and carries the last id over', () => {
    expect(parse([STREAM])).toEqual(EXPECTED);
  });

  it('gives the same messages however the stream is cut into chunks', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: STREAM.length }), { maxLength: 12 }), (cuts) => {
        const points = [0, ...[...new Set(cuts)].sort((a, b) => a - b), STREAM.length];
        const chunks = points.slice(1).map((end, i) => STREAM.slice(points[i], end));
        expect(parse(chunks)).toEqual(EXPECTED);
      }),
    );
  });

  it('reads a byte stream whose UTF-8 characters are split between chunks', async () => {
    const bytes = new TextEncoder().encode('event: event\ndata: héllo ✓\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 3) controller.enqueue(bytes.slice(i, i + 3));
        controller.close();
      },
    });
    const messages: SseMessage[] = [];
    for await (const m of readSse(body)) messages.push(m);
    expect(messages).toEqual([{ event: 'event', data: 'héllo ✓', id: undefined }]);
  });

  it('cancels the body when the reader stops early', async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('data: a\n\ndata: b\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const m of readSse(body)) {
      expect(m.data).toBe('a');
      break;
    }
    expect(cancelled).toBe(true);
  });
});
