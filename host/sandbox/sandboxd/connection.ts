// One RPC session with sandboxd over a pair of streams (the container's demuxed attach stdout and
// its stdin, or a link socket). Owns framing, the hello handshake, request ids, per-call timeouts
// and cancellation. This module wires the parts, each in its own module over one ConnState
// (connection-state.ts: what the connection holds, and how it fails): receive.ts reads what
// sandboxd sends (the hello, answers, output, stream credit); send.ts writes frames with
// backpressure and makes calls and stream calls; streams.ts keeps the open streams;
// connection-types.ts is the Connection its callers see.
// Invariants: the host process never crashes on what sandboxd sends; a frame that is oversized,
// not JSON, or fails its schema fails the whole connection (pending calls reject with
// SANDBOX_PROTOCOL); a dead stream fails it with SANDBOX_UNAVAILABLE; once failed, every call
// rejects at once. Answers to unknown ids (late, cancelled or timed out calls) are ignored. An
// error answer keeps its code only when the code is on sandboxd's short list (../wire-errors.ts);
// any other fails that one call with SANDBOX_PROTOCOL.
// Streams (bulk bytes in data frames, credit-based: streams.ts) are opened with `stream` when
// sandboxd's hello says it speaks them (`hello.streams`); a data frame on a connection whose
// sandboxd did not say so is a protocol error like any other.
// The streams belong to the caller: closing the connection detaches from them but never ends them.

import { randomBytes } from 'node:crypto';
import {
  encodeFrame,
  FrameDecoder,
  PROTOCOL_VERSION,
  RESYNC_MARKER,
} from '../../../sandbox-wire/protocol.ts';
import { SandboxError } from '../../errors.ts';
import { type ConnState, fail, protocolError } from './connection-state.ts';
import type { Connection, HelloInfo, OpenOptions } from './connection-types.ts';
import { receive, receiveData } from './receive.ts';
import { valueSchemas } from './schemas.ts';
import { call, openStream, send } from './send.ts';
import { createStreamTable } from './streams.ts';

export type { CallOptions, Connection, HelloInfo, OpenOptions, StreamOptions } from './connection-types.ts';

export function openConnection(options: OpenOptions): Promise<Connection> {
  const { input, output, root } = options;
  let settleClosed: (e: SandboxError) => void = () => {};
  const closed = new Promise<SandboxError>((r) => {
    settleClosed = r;
  });
  const s: ConnState = {
    input,
    output,
    root,
    schemas: valueSchemas(root),
    session: randomBytes(12).toString('hex'),
    pending: new Map(),
    nextId: 1,
    synced: false,
    hello: undefined,
    failure: undefined,
    draining: undefined,
    settleClosed,
    helloDone: undefined,
    // Its callbacks run only once the connection is up.
    streams: createStreamTable({
      sendMessage: (message) => send(s, message),
      sendFrame: (frame) => send(s, frame),
      violation: (why) => protocolError(s, why),
      stallMs: options.streamStallMs ?? 60_000,
    }),
    onData: (chunk) => {
      try {
        decoder.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
      } catch (e) {
        protocolError(s, e instanceof Error ? e.message : 'decoder failure');
      }
    },
    onGone: () =>
      fail(
        s,
        new SandboxError(
          'SANDBOX_UNAVAILABLE',
          'The connection to sandboxd was lost; reconnect to the sandbox.',
        ),
      ),
  };
  const decoder = new FrameDecoder({
    onMessage: (raw) => receive(s, raw),
    onData: (id, payload) => receiveData(s, id, payload),
    onError: (e) => {
      if (s.synced) protocolError(s, e.message);
    },
    onResync: () => {
      s.synced = true;
    },
  });

  const connection: Connection = {
    get hello(): HelloInfo {
      return s.hello as HelloInfo;
    },
    closed,
    call: (op, args, opts) => call(s, op, args, opts),
    stream: (op, args, opts) => openStream(s, op, args, opts),
    get openStreams() {
      return s.streams.size;
    },
    close: (reason) =>
      fail(
        s,
        reason ?? new SandboxError('SANDBOX_UNAVAILABLE', 'The sandboxd connection was closed by the host.'),
      ),
  };

  if (input.readableEnded || input.destroyed || output.writableEnded || output.destroyed) {
    return Promise.reject(
      new SandboxError(
        'SANDBOX_UNAVAILABLE',
        'The streams to sandboxd are already closed; re-attach to the sandbox.',
      ),
    );
  }
  return handshake(s, connection, options.helloTimeoutMs);
}

/** Listens to the streams and says hello; the connection once sandboxd answers this session's hello. */
function handshake(s: ConnState, connection: Connection, helloTimeoutMs: number): Promise<Connection> {
  const { input, output } = s;
  return new Promise<Connection>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        fail(
          s,
          new SandboxError(
            'SANDBOX_UNAVAILABLE',
            `sandboxd did not answer hello within ${helloTimeoutMs} ms; is the container running?`,
          ),
        ),
      helloTimeoutMs,
    );
    s.helloDone = {
      resolve: () => {
        clearTimeout(timer);
        s.helloDone = undefined;
        resolve(connection);
      },
      reject: (e) => {
        clearTimeout(timer);
        s.helloDone = undefined;
        reject(e);
      },
    };
    input.on('data', s.onData);
    input.on('end', s.onGone);
    input.on('close', s.onGone);
    input.on('error', s.onGone);
    output.on('error', s.onGone);
    output.on('close', s.onGone);
    const helloFrame = Buffer.concat([
      RESYNC_MARKER,
      encodeFrame({ t: 'hello', v: PROTOCOL_VERSION, session: s.session }),
    ]);
    send(s, helloFrame).catch(() => {});
  });
}
