// One stream of sandboxd's streams (streams.ts): opening it as its call's request arrives, with the
// Sender and Receiver its handler gets, and failing its incoming side.
// Invariants: we send data frames only within the host's credit and only while our stdout holds
// about one frame; a call that takes bytes grants the rest of its window at once; an abort (or
// close, in the handler's finally) stops a sender waiting for our stdout; close removes only its
// own stream (a newer one under the same id stays).
import { WireError } from '../../sandbox-wire/errors.ts';
import { allocData, DATA_HEADER_BYTES, finishData, MAX_DATA_BYTES } from '../../sandbox-wire/protocol.ts';
import { Inbound, Outbound, RECEIVE_WINDOW_BYTES, STREAM_WINDOW_BYTES } from '../../sandbox-wire/streams.ts';

/** Written frames a sending stream keeps for its next ones (credit bounds how many are in flight anyway). */
const FRAME_POOL = 4;

/** What a handler that sends bytes gets. */
export interface Sender {
  /** Waits for credit; resolves with 1..max bytes the caller may send now. Rejects once aborted. */
  credit(max: number): Promise<number>;
  /**
   * Sends a frame from `frame` whose first `used` payload bytes are filled (within credit taken);
   * the frame is not to be touched again (it goes back to this stream's pool once written).
   */
  send(frame: Buffer, used: number): void;
  /**
   * A frame for up to `bytes` (at most MAX_DATA_BYTES) on this stream (protocol.ts allocData): a
   * full-size one from this stream's pool when a written one is free, so that a transfer does not
   * allocate (and collect) a fresh 256 KiB buffer per frame.
   */
  frame(bytes: number): Buffer;
  /** No more data from us on this stream. */
  end(): void;
}

/** What a handler that receives bytes gets: the host's payloads in order, until its end. */
export interface Receiver {
  /** The next payloads that arrived (all of them at once, for one writev), or undefined at the end. */
  next(): Promise<Buffer[] | undefined>;
  /** The handler is done with `bytes` of them: grant that much credit back (in halves of the window). */
  consumed(bytes: number): void;
}

export interface Incoming {
  flow: Inbound;
  queue: Buffer[];
  wake: (() => void) | undefined;
  failure: Error | undefined;
}

/** How one stream reaches the host: send and write are no-ops once its session is over. */
export interface StreamOutput {
  /** Sends a control message. */
  send: (message: object) => void;
  /** Writes a finished frame; `done` runs once it was handed to the OS (or dropped). */
  write: (frame: Buffer, done?: () => void) => void;
  /**
   * Resolves once our stdout holds little enough that another data frame may be queued: credit
   * bounds what is in flight, this bounds what other calls' answers queue behind in our own
   * buffer (about one frame), so they interleave with a transfer instead of waiting out a window.
   */
  ready: () => Promise<void>;
}

export interface StreamsState {
  readonly outgoing: Map<number, Outbound>;
  readonly incoming: Map<number, Incoming>;
}

export const abortError = (): WireError => new WireError('ABORTED', 'The transfer was cancelled.');

export const failIncoming = (state: StreamsState, id: number, error: Error): void => {
  const s = state.incoming.get(id);
  if (!s || s.failure) return;
  s.failure = error;
  s.queue = [];
  s.wake?.();
};

/**
 * Sets up the stream of call `id` as its request arrives (the host may send data right behind it,
 * within the window every stream starts with); `close` (in the handler's finally) removes it.
 */
export const openStream = (
  state: StreamsState,
  id: number,
  signal: AbortSignal,
  output: StreamOutput,
  receives: boolean,
) => {
  const { outgoing, incoming } = state;
  const out = new Outbound(STREAM_WINDOW_BYTES);
  const s: Incoming = {
    flow: new Inbound(RECEIVE_WINDOW_BYTES),
    queue: [],
    wake: undefined,
    failure: undefined,
  };
  // A call that takes bytes grants the rest of its window at once (the host starts with the default).
  if (receives) output.send({ t: 'credit', id, bytes: RECEIVE_WINDOW_BYTES - STREAM_WINDOW_BYTES });
  let stopped = (): void => {};
  // Settles on abort: a sender waiting for our stdout to drain (which may never happen once the
  // host is gone) stops too.
  const aborted = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  const onAbort = (): void => {
    out.close(abortError());
    failIncoming(state, id, abortError());
    stopped();
  };
  outgoing.set(id, out);
  incoming.set(id, s);
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) onAbort();
  // Full-size frames written and free again: at most FRAME_POOL of them, dropped with the stream.
  const pool: Buffer[] = [];
  const full = DATA_HEADER_BYTES + MAX_DATA_BYTES + 1;
  const sender: Sender = {
    credit: async (max) => {
      await Promise.race([output.ready(), aborted]);
      return out.acquire(Math.min(max, MAX_DATA_BYTES));
    },
    frame: (bytes) => pool.pop() ?? allocData(id, bytes < MAX_DATA_BYTES / 4 ? bytes : MAX_DATA_BYTES),
    send: (frame, used) => {
      const reuse = frame.length === full && pool.length < FRAME_POOL;
      output.write(finishData(frame, used), reuse ? () => pool.push(frame) : undefined);
    },
    end: () => output.send({ t: 'end', id }),
  };
  const receiver: Receiver = {
    async next() {
      while (s.queue.length === 0 && !s.failure && !s.flow.isEnded)
        await new Promise<void>((resolve) => {
          s.wake = resolve;
        });
      s.wake = undefined;
      if (s.failure) throw s.failure;
      if (s.queue.length === 0) return undefined;
      return s.queue.splice(0);
    },
    consumed(bytes) {
      const grant = s.flow.consumed(bytes);
      if (grant > 0) output.send({ t: 'credit', id, bytes: grant });
    },
  };
  const close = (): void => {
    stopped();
    signal.removeEventListener('abort', onAbort);
    out.close(abortError());
    if (outgoing.get(id) === out) outgoing.delete(id);
    if (incoming.get(id) === s) incoming.delete(id);
  };
  return { sender, receiver, close };
};
