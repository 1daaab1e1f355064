// The host's end of streams (sandbox-wire/streams.ts) on one sandboxd connection: the table of open
// streams by call id, what arrives for them and the credit we grant, and what we send within
// sandboxd's credit. connection.ts routes data frames, `credit` and `end` here and calls `answered`
// when a stream's call gets its answer.
// Invariants (sandboxd is untrusted): we hold at most one window per stream (RECEIVE_WINDOW_BYTES,
// plus the frame being decoded), since credit is granted back only as the consumer takes bytes; its
// bytes are views of what the socket read, never copied, each keeping alive at most twice its own
// size (protocol.ts keepParts), so the memory behind a window is at most two windows;
// data for a stream we never opened or that is answered, past the credit we granted, or after its
// end fails the whole connection (`violation`); a stream whose consumer stops or goes quiet past
// `stallMs` is abandoned: its call is cancelled and what still arrives for it is dropped (within
// its credit) until the answer removes it, so a slow or gone HTTP client never grows the host's
// memory and never leaves sandboxd reading.

import { encodeDataParts, MAX_DATA_BYTES, sliceParts } from '../../../sandbox-wire/protocol.ts';
import {
  FlowError,
  Inbound,
  Outbound,
  RECEIVE_WINDOW_BYTES,
  STREAM_WINDOW_BYTES,
} from '../../../sandbox-wire/streams.ts';
import { SandboxError } from '../../errors.ts';
import { asBuffer } from '../chunks.ts';

const EMPTY = Buffer.alloc(0);

/** One stream as its opener sees it. */
export interface StreamHandle {
  /**
   * What sandboxd sends, in order; credit goes back as each piece is taken. Ends at its end or
   * answer. An empty data frame arrives as an empty piece (a mark some calls send).
   */
  readonly incoming: AsyncIterable<Buffer>;
  /**
   * Sends `data` (one buffer, or parts sent as if concatenated) within sandboxd's credit, in data
   * frames written without copying the bytes (encodeDataParts); resolves once they are written.
   */
  write(data: Uint8Array | readonly Uint8Array[]): Promise<void>;
  /** Tells sandboxd we send no more. */
  end(): Promise<void>;
  /** The consumer let go: cancel the call (if it is still running) and drop what arrives. */
  abandon(): void;
  /** Grants the rest of our window beyond the one every stream starts with; call once its request is sent. */
  opened(): void;
}

interface Entry {
  inbound: Inbound;
  outbound: Outbound;
  queue: Buffer[];
  wake: (() => void) | undefined;
  failure: SandboxError | undefined;
  abandoned: boolean;
}

export interface StreamTableOptions {
  /** Sends a control message (credit, end). */
  sendMessage(message: { t: 'credit'; id: number; bytes: number } | { t: 'end'; id: number }): Promise<void>;
  /** Writes one finished data frame (its buffers in order, one writev), waiting while the socket is full. */
  sendFrame(frame: Buffer[]): Promise<void>;
  /** Fails the connection: sandboxd broke flow control. */
  violation(why: string): void;
  /** Longest wait for data or credit before a stream is given up with SANDBOX_UNAVAILABLE. */
  stallMs: number;
}

export const createStreamTable = (options: StreamTableOptions) => {
  const open = new Map<number, Entry>();

  const stalled = (what: string): SandboxError =>
    new SandboxError(
      'SANDBOX_UNAVAILABLE',
      `sandboxd sent no ${what} for ${options.stallMs} ms; the transfer was stopped. Try again.`,
    );

  /** Resolves when `wait` does, or rejects with `error()` after `stallMs` (0: never). */
  const withStall = async <T>(wait: Promise<T>, error: () => SandboxError, stallMs: number): Promise<T> => {
    if (stallMs === 0) return wait;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        wait,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(error()), stallMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  };

  const fail = (e: Entry, error: SandboxError): void => {
    if (e.failure) return;
    e.failure = error;
    e.queue = [];
    e.outbound.close(error);
    e.wake?.();
  };

  /**
   * Opens the stream of call `id` (before its request is sent); `cancel` stops that call. `stallMs`
   * overrides the table's for this stream (0: none, for a tunnel that may idle as long as its peers).
   */
  const openStream = (id: number, cancel: () => void, stallMs: number = options.stallMs): StreamHandle => {
    const e: Entry = {
      inbound: new Inbound(RECEIVE_WINDOW_BYTES),
      outbound: new Outbound(),
      queue: [],
      wake: undefined,
      failure: undefined,
      abandoned: false,
    };
    open.set(id, e);
    const abandon = (): void => {
      if (e.abandoned) return;
      e.abandoned = true;
      fail(e, new SandboxError('ABORTED', 'The transfer was stopped.'));
      if (open.has(id)) cancel();
    };
    async function* incoming(): AsyncGenerator<Buffer> {
      try {
        for (;;) {
          if (e.queue.length === 0 && !e.failure && !e.inbound.isEnded) {
            await withStall(
              new Promise<void>((resolve) => {
                e.wake = resolve;
              }),
              () => stalled('data'),
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
          if (grant > 0 && open.has(id))
            void options.sendMessage({ t: 'credit', id, bytes: grant }).catch(() => {});
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
            () => stalled('credit'),
            stallMs,
          ).catch((error: unknown) => {
            abandon();
            throw error;
          });
          await options.sendFrame(encodeDataParts(id, sliceParts(parts, at, at + n)));
          at += n;
        }
      },
      async end() {
        if (e.failure) throw e.failure;
        await options.sendMessage({ t: 'end', id });
      },
      abandon,
      opened() {
        const extra = RECEIVE_WINDOW_BYTES - STREAM_WINDOW_BYTES;
        if (extra > 0) void options.sendMessage({ t: 'credit', id, bytes: extra }).catch(() => {});
      },
    };
  };

  return {
    open: openStream,
    /** Data frames in flight, for tests and metrics: the number of streams still in the table. */
    get size(): number {
      return open.size;
    },
    /** One data frame's payload, in the parts it arrived in (views: no copy of bulk bytes). */
    data(id: number, payload: Buffer[]): void {
      const e = open.get(id);
      if (!e) {
        options.violation(`data for stream ${id}, which is not open`);
        return;
      }
      let bytes = 0;
      for (const part of payload) bytes += part.length;
      try {
        e.inbound.received(bytes);
      } catch (error) {
        if (!(error instanceof FlowError)) throw error;
        options.violation(`stream ${id}: ${error.message}`);
        return;
      }
      if (e.abandoned || e.failure) return;
      // An empty frame is a mark the consumer sees as an empty piece (egressAccept's "a connection
      // arrived"); marks in a row are one, so frames without bytes cannot grow the queue.
      if (bytes > 0) e.queue.push(...payload);
      else if (e.queue.at(-1) !== EMPTY) e.queue.push(EMPTY);
      else return;
      e.wake?.();
    },
    credit(id: number, bytes: number): void {
      const e = open.get(id);
      if (!e) return; // a late grant for a stream we are done with
      try {
        e.outbound.grant(bytes);
      } catch (error) {
        if (!(error instanceof FlowError)) throw error;
        options.violation(`stream ${id}: ${error.message}`);
      }
    },
    end(id: number): void {
      const e = open.get(id);
      if (!e) return;
      e.inbound.end();
      e.wake?.();
    },
    /** The call of stream `id` was answered: nothing more may arrive for it, nothing more is sent. */
    answered(id: number): void {
      const e = open.get(id);
      if (!e) return;
      open.delete(id);
      e.inbound.end();
      e.outbound.close(new SandboxError('SANDBOX_PROTOCOL', 'sandboxd ended the stream before its end.'));
      e.wake?.();
    },
    /** The connection is gone: every stream fails with its reason. */
    failAll(error: SandboxError): void {
      for (const e of open.values()) fail(e, error);
      open.clear();
    },
  };
};

export type StreamTable = ReturnType<typeof createStreamTable>;
