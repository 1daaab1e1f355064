// Where the host's frames come from: stdin and, once the host asked for it (`dial`, link.ts), a unix
// socket too; and what each frame does: a hello starts a new session on its link (ending the
// previous one: its running calls abort and its answers are dropped), a cancel aborts a call,
// credit and ends go to the streams, a request goes to server-calls.ts.
// Invariants: a session belongs to the link its hello came on: frames from any other link are
// ignored but for a hello (which moves the session to that link); a link that closes under its
// session ends that session, so nothing waits on a dead socket; at most one socket link is open (a
// new dial closes the previous one); a frame we cannot parse is logged and skipped up to the next
// RESYNC; nothing a frame carries can throw out of here.
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { WireError } from '../../sandbox-wire/errors.ts';
import {
  encodeFrame,
  FrameDecoder,
  LINK_VERSION,
  NO_SYMLINKS_VERSION,
  OPS,
  type Op,
  PROTOCOL_VERSION,
  RESYNC_MARKER,
  STREAMS_VERSION,
} from '../../sandbox-wire/protocol.ts';
import { onRequest } from './server-calls.ts';
import { endSession, failure, type Link, type ServerState, send, write } from './server-state.ts';
import type { Args } from './util.ts';

function onMessage(s: ServerState, m: Record<string, unknown>, link: Link): void {
  if (m.t === 'hello') {
    onHello(s, m, link);
    return;
  }
  if (s.session === 0 || link !== s.current) return; // no session here: nobody to answer
  const id = m.id;
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 1 || id > 2 ** 31) {
    s.log('frame without a valid id skipped');
    return;
  }
  if (m.t === 'cancel') {
    s.inflight.get(id)?.abort();
    return;
  }
  if (m.t === 'credit') {
    s.streams.onCredit(id, m.bytes);
    return;
  }
  if (m.t === 'end') {
    s.streams.onEnd(id);
    return;
  }
  if (m.t !== 'req') {
    s.log(`unknown frame type ${String(m.t).slice(0, 32)} skipped`);
    return;
  }
  const op = m.op as Op;
  const args = m.args;
  if (
    !(OPS as readonly string[]).includes(String(op)) ||
    typeof args !== 'object' ||
    args === null ||
    Array.isArray(args)
  ) {
    const unknown = `Unknown operation ${String(op).slice(0, 32)} or malformed args.`;
    send(s, s.session, failure(id, new WireError('INVALID_ARGUMENTS', unknown)));
    return;
  }
  void onRequest(s, id, op, args as Args);
}

function onHello(s: ServerState, m: Record<string, unknown>, link: Link): void {
  endSession(s);
  // Another link takes the session: the socket link's host must learn at once, not by silence.
  if (s.socketLink !== undefined && s.socketLink !== link) s.socketLink.close();
  s.current = link;
  const reply = {
    t: 'hello',
    v: PROTOCOL_VERSION,
    session: String(m.session).slice(0, 64),
    pid: process.pid,
    root: s.root,
    node: process.version,
    streams: STREAMS_VERSION,
    noSymlinks: NO_SYMLINKS_VERSION,
    ...(s.linkPath ? { link: LINK_VERSION } : {}),
  };
  write(s, Buffer.concat([RESYNC_MARKER, encodeFrame(reply)]));
  if (m.v !== PROTOCOL_VERSION) s.log(`host speaks protocol ${String(m.v)}, we speak ${PROTOCOL_VERSION}`);
}

/** Serves frames from `input`; the answers of a session started there go to `link.output`. */
export function serve(s: ServerState, input: Readable, link: Link): void {
  const decoder = new FrameDecoder({
    onMessage: (m) => {
      try {
        onMessage(s, m, link);
      } catch (e) {
        s.log(`frame handling failed: ${(e as Error).message}`);
      }
    },
    onData: (id, payload) => {
      if (s.session !== 0 && link === s.current) s.streams.onData(id, payload);
    },
    onError: (e) => s.log(`bad input (${e.message}); skipping to the next hello`),
  });
  input.on('data', (chunk: Buffer) => decoder.push(chunk));
}

/** A dialled link socket: it replaces the previous one; its session ends when it closes. */
export function addSocket(s: ServerState, socket: Socket): void {
  s.socketLink?.close();
  const link: Link = { output: socket, draining: false, close: () => socket.destroy() };
  s.socketLink = link;
  socket.on('error', (e) => s.log(`link: ${e.message}`));
  socket.once('close', () => {
    if (s.socketLink === link) s.socketLink = undefined;
    if (s.current !== link) return;
    endSession(s);
    s.current = undefined;
  });
  serve(s, socket, link);
}
