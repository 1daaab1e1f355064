// What sandboxd's session loop holds (server.ts wires it), in one object its parts (server-links.ts,
// server-calls.ts, server-handlers.ts) take as their first argument: the session counter, the link
// the current session answers on, the calls in flight, the writers waiting for a drain, the streams
// and the handler table; and the one way out: write() to the current link, send() for a session.
// Invariants: `session` only grows (0: no hello yet), and output of any other session than the
// current one is dropped, never written; `current` is the link the current session's hello came
// on, undefined before the first hello and after its link closed; drain waiters belong to the
// current session and go with it.
import type { Writable } from 'node:stream';
import { WireError } from '../../sandbox-wire/errors.ts';
import { encodeFrame, FrameError, type Op } from '../../sandbox-wire/protocol.ts';
import type { Streams } from './streams.ts';
import type { TransferIo } from './transfer.ts';
import { type Args, wireError } from './util.ts';

export type Handler = (
  args: Args,
  ctx: { id: number; signal: AbortSignal; session: number; io: TransferIo },
) => Promise<object>;

/** Where frames come from and where the answers of a session started on it go. */
export interface Link {
  output: Writable;
  /** Its output said "wait for drain" and has not drained yet. */
  draining: boolean;
  close(): void;
}

export interface ServerState {
  log: (line: string) => void;
  root: string;
  linkPath: string | undefined;
  opDeadlineMs: number;
  onFirstAnswer: (() => void) | undefined;
  /** Starts the egress proxy (once; see listen()). */
  startProxy: () => Promise<void>;
  listening: Promise<void> | undefined;
  streams: Streams;
  /** Every op's handler (server-handlers.ts), set once at start. */
  handlers: Record<Op, Handler>;
  session: number;
  current: Link | undefined;
  /** The socket link, while one is open. */
  socketLink: Link | undefined;
  firstAnswer: boolean;
  /** A call other than the handshake's (ping, dial) came: the sandbox is in use (warm-up.ts skips). */
  used: boolean;
  inflight: Map<number, AbortController>;
  drainWaiters: Array<() => void>;
}

/**
 * The egress proxy, listening. It starts once the first call is answered: writing its CA bundle and
 * listening cost ~60 ms of CPU at boot, which the host's wait for a ready sandbox need not include.
 * Every call but a ping waits for it, so no command ever starts without the proxy's variables.
 */
export function listen(s: ServerState): Promise<void> {
  s.listening ??= s.startProxy();
  return s.listening;
}

/** The answer to a failed call: whatever was thrown, as a code from the wire's list and a message. */
export function failure(id: number, error: unknown): object {
  return { t: 'res', id, ok: false, error: wireError(error) };
}

export function write(s: ServerState, frame: Buffer, done?: () => void): boolean {
  const link = s.current;
  if (link === undefined) return true; // nobody is listening
  const ok = link.output.write(frame, done);
  if (!ok && !link.draining) {
    link.draining = true;
    link.output.once('drain', () => {
      link.draining = false;
      if (link === s.current) for (const fn of s.drainWaiters.splice(0)) fn();
    });
  }
  return ok;
}

/** Forgets the current session: its calls stop and its answers are dropped (a hello's first step). */
export function endSession(s: ServerState): void {
  for (const ac of s.inflight.values()) ac.abort();
  s.inflight.clear();
  s.streams.closeAll();
  s.drainWaiters.length = 0;
  s.session++;
}

export function send(s: ServerState, forSession: number, message: object): boolean {
  if (forSession !== s.session) return true; // a previous session's output: nobody is listening for it
  try {
    return write(s, encodeFrame(message));
  } catch (e) {
    if (!(e instanceof FrameError) || !('id' in message)) throw e;
    const tooLarge = new WireError(
      'PAYLOAD_TOO_LARGE',
      `The answer is too large for one frame (${e.message}); ask for less (a smaller limit or length).`,
    );
    return write(s, encodeFrame(failure((message as { id: number }).id, tooLarge)));
  }
}
