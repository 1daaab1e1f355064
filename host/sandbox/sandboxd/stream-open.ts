// Opening one stream of a sandboxd connection (streams.ts wires the table): the handle its opener
// reads from (incoming, which grants credit back only as the consumer takes bytes, so we hold at
// most one window), writes to (within sandboxd's credit, in data frames that reference the bytes
// rather than copy them), ends, or abandons. A consumer that stops early, fails, or waits past
// stallMs abandons the stream: its call is cancelled and what still arrives is dropped.

import { encodeDataParts, MAX_DATA_BYTES, sliceParts } from '../../../sandbox-wire/protocol.ts';
import {
  Inbound,
  Outbound,
  RECEIVE_WINDOW_BYTES,
  STREAM_WINDOW_BYTES,
} from '../../../sandbox-wire/streams.ts';
import { SandboxError } from '../../errors.ts';
import { asBuffer } from '../chunks.ts';
import { type Entry, fail, type StreamHandle, stalled, type TableState, withStall } from './stream-state.ts';

/**
 * Opens the stream of call `id` (before its request is sent); `cancel` stops that call. `stallMs`
 * overrides the table's for this stream (0: none, for a tunnel that may idle as long as its peers).
 */
export function openStream(
  t: TableState,
  id: number,
  cancel: () => void,
  stallMs: number = t.options.stallMs,
): StreamHandle {
  const e: Entry = {
    inbound: new Inbound(RECEIVE_WINDOW_BYTES),
    outbound: new Outbound(),
    queue: [],
    wake: undefined,
    failure: undefined,
    abandoned: false,
  };
  t.open.set(id, e);
  const abandon = (): void => {
    if (e.abandoned) return;
    e.abandoned = true;
    fail(e, new SandboxError('ABORTED', 'The transfer was stopped.'));
    if (t.open.has(id)) cancel();
  };
  async function* incoming(): AsyncGenerator<Buffer> {
    try {
      for (;;) {
        if (e.queue.length === 0 && !e.failure && !e.inbound.isEnded) {
          await withStall(
            new Promise<void>((resolve) => {
              e.wake = resolve;
            }),
            () => stalled(t, 'data'),
            stallMs,
          );
          e.wake = undefined;
        }
        if (e.failure) throw e.failure;
        const piece = e.queue.shift();
        if (piece === undefined) {
          if (e.inbound.isEnded) return;
          continue;
        }
        const grant = e.inbound.consumed(piece.length);
        if (grant > 0 && t.open.has(id))
          void t.options.sendMessage({ t: 'credit', id, bytes: grant }).catch(() => {});
        yield piece;
      }
    } catch (error) {
      abandon();
      throw error;
    } finally {
      // A consumer that stops early (return()) lets go of the stream.
      if (!e.inbound.isEnded || e.queue.length > 0) abandon();
    }
  }
  return {
    incoming: { [Symbol.asyncIterator]: incoming },
    async write(data) {
      const parts = (Array.isArray(data) ? data : [data]).map(asBuffer);
      let total = 0;
      for (const part of parts) total += part.length;
      for (let at = 0; at < total; ) {
        const n = await withStall(
          e.outbound.acquire(Math.min(MAX_DATA_BYTES, total - at)),
          () => stalled(t, 'credit'),
          stallMs,
        ).catch((error: unknown) => {
          abandon();
          throw error;
        });
        await t.options.sendFrame(encodeDataParts(id, sliceParts(parts, at, at + n)));
        at += n;
      }
    },
    async end() {
      if (e.failure) throw e.failure;
      await t.options.sendMessage({ t: 'end', id });
    },
    abandon,
    opened() {
      const extra = RECEIVE_WINDOW_BYTES - STREAM_WINDOW_BYTES;
      if (extra > 0) void t.options.sendMessage({ t: 'credit', id, bytes: extra }).catch(() => {});
    },
  };
}
