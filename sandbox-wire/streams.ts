// Credit-based flow control for streams: the byte channels that data frames (protocol.ts) carry in
// either direction over the one attach stream, each named by the id of the call that opened it.
// Every stream starts with STREAM_WINDOW_BYTES of credit in each direction (no grant needed: data
// can follow its request at once); a receiver then grants more (`{ t: 'credit', id, bytes }`) as
// its consumer takes bytes; a sender sends at most what it was granted; `{ t: 'end', id }` says a
// side sends no more. Generic on
// purpose: file transfers use it today, a tunnelled TCP connection can use it the same way.
// Shared by the host and sandboxd (bundled into the image: Node 18, imports only node:buffer users).
// Invariants: a sender never has more than MAX_WINDOW_BYTES of credit; a receiver holds at most the
// window it granted; credit must be a positive integer, data past the credit granted or after the
// end is a FlowError (the host fails the connection over it, sandboxd fails the stream).

/** Credit every stream starts with in each direction, before any grant (both sides assume it). */
export const STREAM_WINDOW_BYTES = 1024 * 1024;
/**
 * The window a receiver of this version keeps: it grants the difference to STREAM_WINDOW_BYTES as
 * the stream opens. Bytes in flight through dockerd's pipes take about 10-30 ms on a loaded
 * machine, so one window must cover that at full speed; it is also the most a receiver holds.
 */
export const RECEIVE_WINDOW_BYTES = 4 * 1024 * 1024;
/** Most credit a sender may hold: a grant beyond it is a protocol error. */
export const MAX_WINDOW_BYTES = 16 * 1024 * 1024;

export class FlowError extends Error {
  override name = 'FlowError';
}

/** A `bytes` field of a credit message, checked: a positive integer of at most MAX_WINDOW_BYTES. */
export const checkCredit = (bytes: unknown): number => {
  if (typeof bytes !== 'number' || !Number.isInteger(bytes) || bytes < 1 || bytes > MAX_WINDOW_BYTES)
    throw new FlowError(`credit must be an integer from 1 to ${MAX_WINDOW_BYTES}, not ${String(bytes)}`);
  return bytes;
};

/**
 * The receiving side of a stream: how much the peer may still send, and when to grant more.
 * `received` checks an arriving payload against the credit; `consumed` returns the credit to grant
 * now (0 while less than half the window was consumed: fewer, larger grants).
 */
export class Inbound {
  private allowed: number;
  private taken = 0;
  private ended = false;
  readonly window: number;

  /** `window`: what this receiver holds at most; the peer starts with STREAM_WINDOW_BYTES of it, the rest is to be granted at once. */
  constructor(window: number = STREAM_WINDOW_BYTES) {
    this.window = checkCredit(window);
    this.allowed = window;
  }

  received(bytes: number): void {
    if (this.ended) throw new FlowError('data after the end of the stream');
    if (bytes > this.allowed)
      throw new FlowError(`${bytes} bytes of data with only ${this.allowed} bytes of credit`);
    this.allowed -= bytes;
  }

  /** The peer said it sends no more; anything after is a FlowError. */
  end(): void {
    this.ended = true;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  consumed(bytes: number): number {
    this.taken += bytes;
    if (this.ended || this.taken < this.window / 2) return 0;
    const grant = this.taken;
    this.taken = 0;
    this.allowed += grant;
    return grant;
  }
}

/**
 * The sending side of a stream: credit granted by the peer, and waiters for it. `acquire(max)`
 * resolves with 1..max bytes the caller may send now (taken from the credit), waiting for a grant
 * when there is none; `close(error)` fails every waiter and every later acquire.
 */
export class Outbound {
  private credit: number;
  private waiters: Array<() => void> = [];
  private failure: Error | undefined;

  /** `initial`: the credit every stream starts with (STREAM_WINDOW_BYTES), 0 for none. */
  constructor(initial: number = STREAM_WINDOW_BYTES) {
    this.credit = initial;
  }

  grant(bytes: unknown): void {
    const n = checkCredit(bytes);
    if (this.credit + n > MAX_WINDOW_BYTES)
      throw new FlowError(`credit over ${MAX_WINDOW_BYTES} bytes outstanding`);
    this.credit += n;
    for (const w of this.waiters.splice(0)) w();
  }

  get available(): number {
    return this.credit;
  }

  async acquire(max: number): Promise<number> {
    while (this.credit === 0) {
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    if (this.failure) throw this.failure;
    const n = Math.min(this.credit, max);
    this.credit -= n;
    return n;
  }

  close(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    for (const w of this.waiters.splice(0)) w();
  }
}
