// The egress proxy's connections waiting for the host (egress.ts): a connection goes to a waiting
// egressAccept, else is queued (paused) for at most QUEUE_MS, then answered 503. Before the host
// ever asked (no control plane serving egress), a connection is answered 503 at once: a refusal,
// never a hang.
// Invariants: at most MAX_QUEUED connections wait; a queued connection's timer is cleared when it
// is taken or the proxy closes; a cancelled accept leaves `waiters`.
import type { Server, Socket } from 'node:net';
import { WireError } from '../../sandbox-wire/errors.ts';

/** Connections waiting for the host to take them; more are answered 503 at once. */
const MAX_QUEUED = 64;
/** Longest a connection waits for the host to take it. */
const QUEUE_MS = 10_000;

export interface EgressQueue {
  readonly queue: Array<{ socket: Socket; timer: NodeJS.Timeout }>;
  readonly waiters: Array<(socket: Socket) => void>;
  /** The host asked for a connection at least once (this process's life). */
  served: boolean;
  server: Server | undefined;
}

/** A plain HTTP answer from sandboxd itself, then the connection is closed. */
const refuse = (socket: Socket, why: string): void => {
  const body = `${why}\n`;
  socket.on('error', () => {});
  socket.end(
    'HTTP/1.1 503 Service Unavailable\r\n' +
      `X-Dsh-Egress: unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), 1000).unref();
};

export function onConnection(state: EgressQueue, socket: Socket): void {
  socket.on('error', () => {});
  const waiter = state.waiters.shift();
  if (waiter) waiter(socket);
  else if (!state.served) refuse(socket, 'Egress is not served for this sandbox (no control plane took it).');
  else if (state.queue.length >= MAX_QUEUED)
    refuse(socket, 'Too many connections are waiting for egress; try again.');
  else queued(state, socket);
}

function queued(state: EgressQueue, socket: Socket): void {
  const { queue } = state;
  const item = {
    socket,
    timer: setTimeout(() => {
      const at = queue.indexOf(item);
      if (at !== -1) queue.splice(at, 1);
      refuse(
        socket,
        `No egress tunnel became free within ${QUEUE_MS} ms (too many open connections, or the control plane is away); try again.`,
      );
    }, QUEUE_MS),
  };
  queue.push(item);
}

/** The next connection, or ABORTED when `signal` fires first. */
export function take(state: EgressQueue, signal: AbortSignal): Promise<Socket> {
  const { queue, waiters } = state;
  state.served = true;
  for (;;) {
    const item = queue.shift();
    if (!item) break;
    clearTimeout(item.timer);
    if (!item.socket.destroyed) return Promise.resolve(item.socket);
  }
  return new Promise<Socket>((resolve, reject) => {
    const onAbort = (): void => {
      const at = waiters.indexOf(give);
      if (at !== -1) waiters.splice(at, 1);
      reject(new WireError('ABORTED', 'The egress accept was cancelled.'));
    };
    const give = (socket: Socket): void => {
      signal.removeEventListener('abort', onAbort);
      resolve(socket);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    waiters.push(give);
  });
}

export function closeQueue(state: EgressQueue): void {
  state.server?.close();
  for (const item of state.queue.splice(0)) {
    clearTimeout(item.timer);
    item.socket.destroy();
  }
}
