// Streams against a fake sandboxd whose every byte the test controls: whatever it sends on a
// stream (data nobody asked for, past the credit, after the end, oversized, negative credit, or
// nothing at all), the transfer fails with a stable code, the host holds no more than its window,
// and the host process keeps running.
import { describe, expect, it } from 'vitest';
import {
  DATA_HEADER_BYTES,
  encodeData,
  encodeFrame,
  MAX_DATA_BYTES,
} from '../../../sandbox-wire/protocol.ts';
import { RECEIVE_WINDOW_BYTES, STREAM_WINDOW_BYTES } from '../../../sandbox-wire/streams.ts';
import { fakeSandboxd, type Reply } from './fake.ts';

/** A fake sandboxd offering streams (unless `streams` is 0), with a short stall time and no liveness pings. */
const fake = async (onRequest: Parameters<typeof fakeSandboxd>[0], streams = 1) =>
  (await fakeSandboxd(onRequest, { streams, streamStallMs: 300, livenessMs: 0 })).client;

const drain = async (it: AsyncIterable<Buffer> | undefined): Promise<number> => {
  let n = 0;
  for await (const piece of it ?? []) n += piece.length;
  return n;
};
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: { code?: string }) => e.code,
  );
const chunk = Buffer.alloc(MAX_DATA_BYTES, 7);

describe('host streams against a hostile sandboxd', () => {
  it('a well-behaved fake streams a file', async () => {
    const client = await fake((req, reply) => {
      reply(encodeData(req.id as number, Buffer.from('hello')));
      reply(encodeFrame({ t: 'end', id: req.id }));
      reply(encodeFrame({ t: 'res', id: req.id, ok: true, value: { bytes: 5, size: 5 } }));
    });
    expect(await drain(client.fs.readStream?.('f', 0, 5))).toBe(5);
    expect(client.openStreams).toBe(0);
    client.close();
  });

  const cases: Array<[string, (id: number, reply: Reply) => void]> = [
    ['data for a stream that is not open', (id, reply) => reply(encodeData(id + 1000, Buffer.from('x')))],
    [
      'data past the credit granted',
      (id, reply) => {
        for (let sent = 0; sent <= RECEIVE_WINDOW_BYTES; sent += chunk.length) reply(encodeData(id, chunk));
      },
    ],
    [
      'data after its end',
      (id, reply) => {
        reply(encodeFrame({ t: 'end', id }));
        reply(encodeData(id, Buffer.from('late')));
      },
    ],
    [
      'a data frame over the size limit',
      (id, reply) => {
        const big = Buffer.alloc(DATA_HEADER_BYTES + MAX_DATA_BYTES + 2);
        big.writeUInt32BE(big.length - 4, 0);
        big[4] = 0;
        big.writeUInt32BE(id, 5);
        reply(big);
      },
    ],
    ['negative credit', (id, reply) => reply(encodeFrame({ t: 'credit', id, bytes: -5 }))],
    [
      'credit past the most outstanding',
      (id, reply) => reply(encodeFrame({ t: 'credit', id, bytes: 2 ** 30 })),
    ],
  ];
  for (const [what, misbehave] of cases) {
    it(`${what} fails the connection with SANDBOX_PROTOCOL`, async () => {
      const client = await fake((req, reply) => misbehave(req.id as number, reply));
      expect(await codeOf(drain(client.fs.readStream?.('f', 0, 64 * 1024 * 1024)))).toBe('SANDBOX_PROTOCOL');
      expect((await client.closed).code).toBe('SANDBOX_PROTOCOL');
      expect(client.openStreams).toBe(0);
    });
  }

  it('a data frame from a sandboxd that did not offer streams fails the connection', async () => {
    const client = await fake((req, reply) => reply(encodeData(req.id as number, Buffer.from('x'))), 0);
    expect(client.fs.readStream).toBeUndefined();
    expect(await codeOf(client.fs.stat('f'))).toBe('SANDBOX_PROTOCOL');
  });

  it('a sandboxd that goes quiet mid-stream fails the transfer after the stall time, not the connection', async () => {
    let cancelled = false;
    const client = await fake((req, reply) => {
      if (req.op === 'ping') return reply(encodeFrame({ t: 'res', id: req.id, ok: true, value: {} }));
      reply(encodeData(req.id as number, Buffer.from('first')));
      // ...and then nothing, until the host cancels.
      setTimeout(() => {
        cancelled = true;
        reply(encodeFrame({ t: 'res', id: req.id, ok: false, error: { code: 'ABORTED', message: 'x' } }));
      }, 500);
    });
    expect(await codeOf(drain(client.fs.readStream?.('f', 0, 100)))).toBe('SANDBOX_UNAVAILABLE');
    expect(await client.ping()).toBeGreaterThanOrEqual(0);
    const deadline = Date.now() + 5000;
    while (!cancelled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(cancelled).toBe(true);
    expect(client.openStreams).toBe(0);
    client.close();
  });

  it('an upload waits for credit and sends no byte past it', async () => {
    let received = 0;
    const client = await fake(() => {}); // takes the request, never grants credit, never answers
    async function* endless(): AsyncGenerator<Buffer> {
      for (;;) {
        received += chunk.length;
        yield chunk;
      }
    }
    const upload = client.fs.writeStream?.('f', endless());
    // One window went out, the next piece waits for credit that never comes: the stall fails it.
    expect(await codeOf(upload ?? Promise.resolve())).toBe('SANDBOX_UNAVAILABLE');
    expect(received).toBeLessThanOrEqual(STREAM_WINDOW_BYTES + 2 * chunk.length);
    client.close();
  });
});
