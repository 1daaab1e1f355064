// An upload refused half-way must still be read to its end (up to the limit), so the client that is
// still sending gets the JSON answer instead of a connection reset. The consumer that stopped (an
// archive check, via Readable.from) lets go of the body asynchronously; drain() must wait for it.
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { uploadBody } from '../../../host/api/body.ts';

describe('uploadBody().drain()', () => {
  it('reads the rest of a body whose consumer stopped early and has not let go yet', async () => {
    const total = 200;
    let pulled = 0;
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled === total) return controller.close();
        pulled++;
        controller.enqueue(new Uint8Array(1024));
      },
    });
    const req = new Request('http://x/upload', {
      method: 'PUT',
      body: source,
      duplex: 'half',
    } as RequestInit);
    const body = uploadBody(req, 1024 * 1024);
    const tar = Readable.from(body, { objectMode: false });
    // The consumer takes a few chunks, then fails and destroys its stream, as a rejected archive does.
    let taken = 0;
    for await (const _ of tar) if (++taken === 3) break;
    await body.drain();
    expect(pulled).toBe(total);
  });
});
