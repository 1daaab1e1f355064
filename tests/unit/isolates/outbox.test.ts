// The IPC framing: the first message of a tick leaves at once, the rest of the tick's burst as one
// batch frame in order, an immediate send goes after what was queued, and a receiver only unpacks
// plain messages from a batch.
import { describe, expect, it } from 'vitest';
import { createOutbox } from '../../../host/isolates/outbox.ts';
import { unbatch } from '../../../host/isolates/protocol.ts';

type Message = { t: string; n: number };

const recorder = () => {
  const frames: unknown[] = [];
  const write = (frame: unknown): boolean => {
    frames.push(frame);
    return true;
  };
  return { frames, write };
};

describe('outbox', () => {
  it('sends the first message of a tick at once and the rest of the burst as one frame, in order', async () => {
    const { frames, write } = recorder();
    const outbox = createOutbox<Message>(write);
    outbox.post({ t: 'call', n: 1 });
    outbox.post({ t: 'call', n: 2 });
    outbox.post({ t: 'call', n: 3 });
    expect(frames).toEqual([{ t: 'call', n: 1 }]);
    await new Promise((r) => setImmediate(r));
    expect(frames).toEqual([
      { t: 'call', n: 1 },
      {
        t: 'batch',
        messages: [
          { t: 'call', n: 2 },
          { t: 'call', n: 3 },
        ],
      },
    ]);
    outbox.post({ t: 'call', n: 4 });
    expect(frames).toHaveLength(3);
  });

  it('sends a lone queued message as itself, and an immediate send after what was queued', async () => {
    const { frames, write } = recorder();
    const outbox = createOutbox<Message>(write, process.nextTick);
    outbox.post({ t: 'call', n: 1 });
    outbox.post({ t: 'call', n: 2 });
    await new Promise((r) => process.nextTick(r));
    outbox.post({ t: 'call', n: 3 });
    outbox.post({ t: 'call', n: 4 });
    outbox.send({ t: 'done', n: 5 });
    await new Promise((r) => setImmediate(r));
    expect(frames).toEqual([
      { t: 'call', n: 1 },
      { t: 'call', n: 2 },
      { t: 'call', n: 3 },
      {
        t: 'batch',
        messages: [
          { t: 'call', n: 4 },
          { t: 'done', n: 5 },
        ],
      },
    ]);
  });

  it('queues without a frame of its own: a queued message leaves with the next send, or at the tick end', async () => {
    const { frames, write } = recorder();
    const outbox = createOutbox<Message>(write);
    outbox.queue({ t: 'pool', n: 1 });
    expect(frames).toEqual([]);
    outbox.send({ t: 'done', n: 2 });
    expect(frames).toEqual([
      {
        t: 'batch',
        messages: [
          { t: 'pool', n: 1 },
          { t: 'done', n: 2 },
        ],
      },
    ]);
    await new Promise((r) => setImmediate(r));
    outbox.queue({ t: 'pool', n: 3 });
    await new Promise((r) => setImmediate(r));
    expect(frames.at(-1)).toEqual({ t: 'pool', n: 3 });
    expect(frames).toHaveLength(2);
  });

  it('drops what is queued when cleared', async () => {
    const { frames, write } = recorder();
    const outbox = createOutbox<Message>(write);
    outbox.post({ t: 'call', n: 1 });
    outbox.post({ t: 'call', n: 2 });
    outbox.clear();
    await new Promise((r) => setImmediate(r));
    expect(frames).toEqual([{ t: 'call', n: 1 }]);
  });
});

describe('unbatch', () => {
  it('unpacks plain messages and drops nested batches and non-messages', () => {
    expect(unbatch({ t: 'done', id: 1 })).toEqual([{ t: 'done', id: 1 }]);
    expect(
      unbatch({
        t: 'batch',
        messages: [
          { t: 'call', id: 1 },
          { t: 'batch', messages: [{ t: 'call', id: 2 }] },
          'x',
          null,
          { id: 3 },
        ],
      }),
    ).toEqual([{ t: 'call', id: 1 }]);
    expect(unbatch({ t: 'batch', messages: 'nope' })).toEqual([]);
  });
});
