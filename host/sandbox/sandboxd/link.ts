// The link's host side (sandbox-wire/protocol.ts LINK_VERSION): a unix socket this process listens
// on just long enough for sandboxd to dial it, in a folder of the container's own that is
// bind-mounted read-only into the container (so nothing inside can replace the socket, and the host
// never connects to anything a container named). The token is sent to sandboxd over its stdin;
// a connection that does not open with the preface and that token within the time allowed is
// closed, whoever made it (anything the agent runs can reach the same socket while it exists).
// Invariants: at most MAX_TRIES connections are looked at per listen (one more gives the link up);
// exactly one is handed over; the listener and its socket file are gone once the link is made or
// given up.

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { LINK_PREFACE_BYTES, linkPreface } from '../../../sandbox-wire/protocol.ts';
import { SandboxError } from '../../errors.ts';

/** Connections looked at before the listener gives up (an agent knocking on the socket meanwhile). */
const MAX_TRIES = 8;
/** The longest a unix socket path may be (sun_path, with its terminating NUL). */
export const MAX_SOCKET_PATH = 107;

export interface LinkListener {
  /** What sandboxd must send (64 hex digits); pass it in the `dial` call. */
  readonly token: string;
  /** The authenticated connection, or a rejection once `timeoutMs` passed or close() ran. */
  readonly accepted: Promise<Socket>;
  /** Stops listening and removes the socket file; a connection already accepted stays open. */
  close(): void;
}

/** Removes a socket file; never throws (it runs in timers and socket callbacks). */
const removeSocketFile = (path: string): void => {
  try {
    rmSync(path, { force: true });
  } catch {
    // listen() reports a path that is in the way
  }
};

const unavailable = (why: string): SandboxError =>
  new SandboxError('SANDBOX_UNAVAILABLE', `The sandbox's link was not made: ${why}.`);

/** Listens on `path` (a stale socket file there is replaced) for the one connection with the token. */
export const listenLink = async (path: string, timeoutMs = 5000): Promise<LinkListener> => {
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) throw unavailable(`the socket path ${path} is too long`);
  const token = randomBytes(32).toString('hex');
  const expected = linkPreface(token);
  let settle: { resolve(s: Socket): void; reject(e: Error): void } | undefined;
  const accepted = new Promise<Socket>((resolve, reject) => {
    settle = { resolve, reject };
  });
  accepted.catch(() => {});
  const looking = new Set<Socket>();
  let tries = 0;
  let done = false;
  const server = createServer({ pauseOnConnect: false }, (socket) => {
    if (done) {
      socket.destroy();
      return;
    }
    // Anything inside can knock; past MAX_TRIES the link is given up at once (the attach stream
    // serves), rather than accepting and closing connections until the deadline.
    if (++tries > MAX_TRIES) {
      socket.destroy();
      finish();
      settle?.reject(unavailable(`more than ${MAX_TRIES} connections came before the one with the token`));
      return;
    }
    looking.add(socket);
    let got = Buffer.alloc(0);
    const drop = (): void => {
      looking.delete(socket);
      socket.destroy();
    };
    socket.on('error', drop);
    socket.on('data', function onData(chunk: Buffer) {
      got = Buffer.concat([got, chunk]);
      if (got.length < LINK_PREFACE_BYTES) return;
      // sandboxd sends nothing after its preface until the host's hello: more is not sandboxd.
      if (done || got.length !== LINK_PREFACE_BYTES || !timingSafeEqual(got, expected)) return drop();
      socket.off('data', onData);
      socket.off('error', drop);
      // Until the session takes it (and after): an error must never be unhandled.
      socket.on('error', () => {});
      looking.delete(socket);
      finish();
      settle?.resolve(socket);
    });
  });
  const finish = (): void => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    server.close();
    for (const s of looking) s.destroy();
    looking.clear();
    removeSocketFile(path);
  };
  const timer = setTimeout(() => {
    finish();
    settle?.reject(unavailable(`no connection with the token within ${timeoutMs} ms`));
  }, timeoutMs);
  removeSocketFile(path);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // sandboxd dials with the agent's effective uid (it runs apart from the agent): the token, not
      // the file's mode, decides who gets in.
      server.listen({ path, readableAll: true, writableAll: true }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    finish();
    throw unavailable(`could not listen on ${path} (${(e as Error).message})`);
  }
  server.on('error', () => {});
  return {
    token,
    accepted,
    close: () => {
      if (done) return;
      finish();
      settle?.reject(unavailable('given up'));
    },
  };
};
