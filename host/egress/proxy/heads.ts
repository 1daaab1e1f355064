// Request-head deadlines for the proxy's HTTP servers. They serve connections handed to them
// (server.emit('connection')) and never listen, so Node's own head timeout (checked by a timer that
// listen() starts) never runs for them, nor its keep-alive timeout on a Duplex without setTimeout.
// Here each connection has a deadline of its own: a request head must be complete within `headMs`
// of the connection's arrival, and the next one within `keepAliveMs` of the last answer; past it
// the client gets a 408 and the connection is closed. Nothing waits on another connection's head,
// so an idle client costs only its own place until its deadline.
// Invariant: a connection with a request or a CONNECT in progress has no deadline here (its
// upstream's idle timeout bounds it); one that closed has no timer left.
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { SandboxError } from '../../errors.ts';

export interface HeadDeadlineOptions {
  /** The first request head is due this long after the connection arrived. */
  headMs: number;
  /** The next request head is due this long after the previous answer finished. */
  keepAliveMs: number;
  /** The 408 written before the connection is closed (none: closed without a word). */
  timeoutAnswer?: (ms: number) => string;
}

/** How long a 408 may take to reach a client that does not read it before the connection is cut. */
const ANSWER_GRACE_MS = 10_000;

/**
 * Closes after `answer` is written: a destroy after a clean end lets sandboxd deliver what it holds
 * and close gracefully (./duplex.ts), where a destroy with an error would cut the client's
 * connection before the answer reached it. Without an answer, or when it cannot be delivered in
 * ANSWER_GRACE_MS (no credit: the client does not read), the connection is cut.
 */
function expire(socket: Duplex, ms: number, answer: string | undefined): void {
  const error = new SandboxError('EGRESS_FAILED', `No complete request head within ${ms} ms.`);
  if (answer === undefined || !socket.writable) {
    socket.destroy(error);
    return;
  }
  const cut = setTimeout(() => socket.destroy(error), ANSWER_GRACE_MS);
  cut.unref();
  socket.end(answer, () => {
    clearTimeout(cut);
    socket.destroy();
  });
}

export function enforceHeadDeadlines(server: Server, options: HeadDeadlineOptions): void {
  const timers = new WeakMap<Duplex, NodeJS.Timeout>();
  /** Requests of a connection not yet answered (pipelined ones overlap). */
  const busy = new WeakMap<Duplex, number>();

  function arm(socket: Duplex, ms: number): void {
    clearTimeout(timers.get(socket));
    timers.set(
      socket,
      setTimeout(() => expire(socket, ms, options.timeoutAnswer?.(ms)), ms),
    );
  }
  function disarm(socket: Duplex): void {
    clearTimeout(timers.get(socket));
    timers.delete(socket);
  }

  server.on('connection', (socket: Duplex) => {
    arm(socket, options.headMs);
    socket.once('close', () => disarm(socket));
  });
  server.on('request', (req, res) => {
    const socket = req.socket as Duplex;
    disarm(socket);
    busy.set(socket, (busy.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const left = (busy.get(socket) ?? 1) - 1;
      busy.set(socket, left);
      if (left === 0 && !socket.destroyed) arm(socket, options.keepAliveMs);
    });
  });
  server.on('connect', (req) => disarm(req.socket as Duplex));
}
