// The state of one sandboxd connection's stream table (streams.ts wires it): the open streams by
// call id, each an Entry (what arrived and is not yet taken, the flow-control counters both ways,
// the failure it ended with), and the failures every part of the table makes the same way.
// Invariants: an Entry fails once (fail), and a failed one holds no bytes; a wait for data or credit
// never outlasts the stream's stallMs (withStall), 0 meaning none.

import type { Inbound, Outbound } from '../../../sandbox-wire/streams.ts';
import { SandboxError } from '../../errors.ts';

export const EMPTY = Buffer.alloc(0);

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

export interface Entry {
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

export interface TableState {
  readonly options: StreamTableOptions;
  /** The open streams by call id; a stream leaves when its call is answered or the connection fails. */
  readonly open: Map<number, Entry>;
}

export const stalled = (t: TableState, what: string): SandboxError =>
  new SandboxError(
    'SANDBOX_UNAVAILABLE',
    `sandboxd sent no ${what} for ${t.options.stallMs} ms; the transfer was stopped. Try again.`,
  );

/** Resolves when `wait` does, or rejects with `error()` after `stallMs` (0: never). */
export const withStall = async <T>(
  wait: Promise<T>,
  error: () => SandboxError,
  stallMs: number,
): Promise<T> => {
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

export const fail = (e: Entry, error: SandboxError): void => {
  if (e.failure) return;
  e.failure = error;
  e.queue = [];
  e.outbound.close(error);
  e.wake?.();
};
