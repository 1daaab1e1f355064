// One RPC session with sandboxd over a pair of streams (the container's demuxed attach stdout and
// its stdin). Owns framing, the hello handshake, request ids, per-call timeouts and cancellation.
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
import type { Readable, Writable } from 'node:stream';
import * as v from 'valibot';
import {
  encodeFrame,
  FrameDecoder,
  FrameError,
  type HostMessage,
  LINK_VERSION,
  NO_SYMLINKS_VERSION,
  type Op,
  PROTOCOL_VERSION,
  RESYNC_MARKER,
  STREAMS_VERSION,
} from '../../../sandbox-wire/protocol.ts';
import { SandboxError } from '../../errors.ts';
import { fromWireAnswer } from '../wire-errors.ts';
import { daemonMessageSchema, type OpValue, valueSchemas } from './schemas.ts';
import { createStreamTable, type StreamHandle } from './streams.ts';

export interface HelloInfo {
  pid: number;
  root: string;
  node: string;
  /** sandboxd speaks streams (data frames): this protocol's STREAMS_VERSION or later. */
  streams: boolean;
  /** sandboxd can dial a link socket (`dial`): this protocol's LINK_VERSION or later. */
  link: boolean;
  /** sandboxd honours `noSymlinks` on its writes: this protocol's NO_SYMLINKS_VERSION or later. */
  noSymlinks: boolean;
}

export interface StreamOptions {
  signal?: AbortSignal | undefined;
  /** Longest wait for data or credit on this stream; 0: none. Default the connection's streamStallMs. */
  stallMs?: number;
}

export interface CallOptions {
  /** Reject with SANDBOX_UNAVAILABLE when no answer comes in this long. */
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** Streamed output of this call (exec). */
  onOut?: ((stream: 'stdout' | 'stderr', data: Buffer) => void) | undefined;
  /** Streamed terminal output of this call (termAttach), at its absolute offset. */
  onTerm?: ((offset: number, data: Buffer) => void) | undefined;
}

export interface Connection {
  readonly hello: HelloInfo;
  /** Resolves (never rejects) with the reason once the connection is gone. */
  readonly closed: Promise<SandboxError>;
  call<O extends Op>(op: O, args: Record<string, unknown>, options: CallOptions): Promise<OpValue<O>>;
  /**
   * A call that moves bulk bytes on its stream (only when `hello.streams`): `io` carries them,
   * `result` is the call's answer. No deadline: the stream fails after a stall instead.
   */
  stream<O extends Op>(
    op: O,
    args: Record<string, unknown>,
    options?: StreamOptions,
  ): { io: StreamHandle; result: Promise<OpValue<O>> };
  /** Streams open on this connection (tests, metrics). */
  readonly openStreams: number;
  /** Fails the connection: pending calls reject with `reason` (default: closed by the host). */
  close(reason?: SandboxError): void;
}

interface Pending {
  op: Op;
  resolve(value: unknown): void;
  reject(error: SandboxError): void;
  onOut: CallOptions['onOut'];
  onTerm?: CallOptions['onTerm'];
}

export interface OpenOptions {
  input: Readable;
  output: Writable;
  root: string;
  helloTimeoutMs: number;
  /** Longest a stream waits for data or credit. Default 60000. */
  streamStallMs?: number;
}

/** A stream call's timer: none in practice (setTimeout's maximum, 24 days); stalls end streams instead. */
const NO_DEADLINE_MS = 2 ** 31 - 1;

export const openConnection = (options: OpenOptions): Promise<Connection> => {
  const { input, output, root } = options;
  const schemas = valueSchemas(root);
  const session = randomBytes(12).toString('hex');
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let synced = false;
  let hello: HelloInfo | undefined;
  let failure: SandboxError | undefined;
  let draining: Promise<void> | undefined;
  let settleClosed: (e: SandboxError) => void = () => {};
  const closed = new Promise<SandboxError>((r) => {
    settleClosed = r;
  });
  let helloDone: { resolve(c: Connection): void; reject(e: SandboxError): void } | undefined;

  // Its callbacks run only once the connection is up, when send and protocolError exist.
  const streams = createStreamTable({
    sendMessage: (message) => send(message),
    sendFrame: (frame) => send(frame),
    violation: (why) => protocolError(why),
    stallMs: options.streamStallMs ?? 60_000,
  });

  const ignore = (): void => {};
  const fail = (error: SandboxError): void => {
    if (failure) return;
    failure = error;
    input.off('data', onData);
    input.off('end', onGone);
    input.off('close', onGone);
    input.off('error', onGone);
    output.off('error', onGone);
    output.off('close', onGone);
    // Swallow late stream errors: with our listeners gone, one would crash the process.
    if (input.listenerCount('error') === 0) input.on('error', ignore);
    if (output.listenerCount('error') === 0) output.on('error', ignore);
    for (const p of pending.values()) p.reject(error);
    pending.clear();
    streams.failAll(error);
    helloDone?.reject(error);
    settleClosed(error);
  };
  const protocolError = (why: string): void =>
    fail(
      new SandboxError(
        'SANDBOX_PROTOCOL',
        `sandboxd broke the protocol (${why}); the connection was closed. Reconnect to the sandbox.`,
      ),
    );

  const onMessage = (raw: Record<string, unknown>): void => {
    if (!synced || failure) return;
    const parsed = v.safeParse(daemonMessageSchema, raw);
    if (!parsed.success) {
      protocolError(`bad frame: ${parsed.issues[0]?.message ?? 'schema'}`);
      return;
    }
    const m = parsed.output;
    if (m.t === 'hello') {
      if (m.session !== session) {
        if (hello)
          fail(
            new SandboxError(
              'SANDBOX_UNAVAILABLE',
              'Another client took over this sandbox; reconnect to use it.',
            ),
          );
        return; // a stale answer to an earlier client's hello
      }
      if (m.v !== PROTOCOL_VERSION) {
        protocolError(`protocol version ${m.v}, expected ${PROTOCOL_VERSION}`);
        return;
      }
      if (m.root !== root) {
        protocolError(`sandboxd root ${m.root}, expected ${root}`);
        return;
      }
      hello = {
        pid: m.pid,
        root: m.root,
        node: m.node,
        streams: (m.streams ?? 0) >= STREAMS_VERSION,
        link: (m.link ?? 0) >= LINK_VERSION,
        noSymlinks: (m.noSymlinks ?? 0) >= NO_SYMLINKS_VERSION,
      };
      helloDone?.resolve(connection);
      return;
    }
    if (!hello) return; // output of the previous session
    if (m.t === 'credit') {
      streams.credit(m.id, m.bytes);
      return;
    }
    if (m.t === 'end') {
      streams.end(m.id);
      return;
    }
    if (m.t === 'res') streams.answered(m.id);
    const p = pending.get(m.id);
    if (!p) return;
    if (m.t === 'out') {
      try {
        p.onOut?.(m.stream, Buffer.from(m.data, 'base64'));
      } catch {
        // a caller's callback must not break the connection
      }
      return;
    }
    if (m.t === 'tout') {
      try {
        p.onTerm?.(m.offset, Buffer.from(m.data, 'base64'));
      } catch {
        // a caller's callback must not break the connection
      }
      return;
    }
    pending.delete(m.id);
    if (!m.ok) {
      p.reject(fromWireAnswer(p.op, m.error));
      return;
    }
    const value = v.safeParse(schemas[p.op], m.value);
    if (!value.success) {
      const e = new SandboxError(
        'SANDBOX_PROTOCOL',
        `sandboxd broke the protocol (bad ${p.op} answer: ${value.issues[0]?.message ?? 'schema'}); the connection was closed.`,
      );
      p.reject(e);
      fail(e);
      return;
    }
    p.resolve(value.output);
  };

  const decoder = new FrameDecoder({
    onMessage,
    onData: (id, payload) => {
      if (!synced || failure || !hello) return;
      if (!hello.streams) return protocolError('a data frame, but sandboxd did not offer streams');
      streams.data(id, payload);
    },
    onError: (e: FrameError) => {
      if (synced) protocolError(e.message);
    },
    onResync: () => {
      synced = true;
    },
  });
  const onData = (chunk: Buffer | string): void => {
    try {
      decoder.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    } catch (e) {
      protocolError(e instanceof Error ? e.message : 'decoder failure');
    }
  };
  const onGone = (): void =>
    fail(
      new SandboxError(
        'SANDBOX_UNAVAILABLE',
        'The connection to sandboxd was lost; reconnect to the sandbox.',
      ),
    );

  /** Writes a message, a finished frame, or a frame's buffers (one writev: corked). */
  const send = async (message: HostMessage | Buffer | Buffer[]): Promise<void> => {
    while (draining) await draining;
    if (failure) throw failure;
    let flowing: boolean;
    if (Array.isArray(message)) {
      output.cork();
      flowing = true;
      for (const part of message) flowing = output.write(part) && flowing;
      output.uncork();
    } else flowing = output.write(Buffer.isBuffer(message) ? message : encodeFrame(message));
    if (!flowing) {
      draining = new Promise<void>((resolve) => {
        const done = (): void => {
          output.off('drain', done);
          output.off('close', done);
          draining = undefined;
          resolve();
        };
        output.on('drain', done);
        output.on('close', done);
      });
    }
  };

  const takeId = (): number => {
    const id = nextId;
    nextId = nextId >= 2 ** 31 ? 1 : nextId + 1;
    return id;
  };
  const call = <O extends Op>(op: O, args: Record<string, unknown>, opts: CallOptions): Promise<OpValue<O>> =>
    callAs(takeId(), op, args, opts);

  const stream = <O extends Op>(op: O, args: Record<string, unknown>, opts: StreamOptions = {}) => {
    if (!hello?.streams)
      throw new SandboxError('SANDBOX_PROTOCOL', `This sandboxd does not speak streams; ${op} needs them.`);
    const id = takeId();
    const ac = new AbortController();
    const io = streams.open(id, () => ac.abort(), opts.stallMs);
    const onAbort = (): void => io.abandon();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const result = callAs(id, op, args, { timeoutMs: NO_DEADLINE_MS, signal: ac.signal }).finally(() =>
      opts.signal?.removeEventListener('abort', onAbort),
    );
    io.opened();
    // The caller may never await it (a consumer that stopped): never an unhandled rejection.
    result.catch(() => {});
    if (opts.signal?.aborted) io.abandon();
    return { io, result };
  };

  const callAs = <O extends Op>(
    id: number,
    op: O,
    args: Record<string, unknown>,
    opts: CallOptions,
  ): Promise<OpValue<O>> => {
    if (failure) return Promise.reject(failure);
    if (opts.signal?.aborted)
      return Promise.reject(new SandboxError('ABORTED', `${op} was aborted before it started.`));
    return new Promise<OpValue<O>>((resolve, reject) => {
      const cleanup = (): void => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        if (!pending.delete(id)) return;
        cleanup();
        send({ t: 'cancel', id }).catch(() => {});
        reject(new SandboxError('ABORTED', `${op} was aborted.`));
      };
      const timer = setTimeout(() => {
        if (!pending.delete(id)) return;
        cleanup();
        send({ t: 'cancel', id }).catch(() => {});
        reject(
          new SandboxError(
            'SANDBOX_UNAVAILABLE',
            `sandboxd did not answer ${op} within ${opts.timeoutMs} ms.`,
            { data: { op } },
          ),
        );
      }, opts.timeoutMs);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      pending.set(id, {
        op,
        onOut: opts.onOut,
        onTerm: opts.onTerm,
        resolve: (value) => {
          cleanup();
          resolve(value as OpValue<O>);
        },
        reject: (error) => {
          cleanup();
          reject(error);
        },
      });
      let frame: Buffer;
      try {
        frame = encodeFrame({ t: 'req', id, op, args });
      } catch (e) {
        pending.delete(id);
        cleanup();
        const why = e instanceof FrameError ? e.message : String(e);
        return reject(
          new SandboxError('PAYLOAD_TOO_LARGE', `${op} request is too large for one frame (${why}).`, {
            cause: e,
          }),
        );
      }
      send(frame).catch((e: unknown) =>
        pending
          .get(id)
          ?.reject(e instanceof SandboxError ? e : new SandboxError('SANDBOX_UNAVAILABLE', String(e))),
      );
    });
  };

  const connection: Connection = {
    get hello(): HelloInfo {
      return hello as HelloInfo;
    },
    closed,
    call,
    stream,
    get openStreams() {
      return streams.size;
    },
    close: (reason) =>
      fail(
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
  return new Promise<Connection>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        fail(
          new SandboxError(
            'SANDBOX_UNAVAILABLE',
            `sandboxd did not answer hello within ${options.helloTimeoutMs} ms; is the container running?`,
          ),
        ),
      options.helloTimeoutMs,
    );
    helloDone = {
      resolve: (c) => {
        clearTimeout(timer);
        helloDone = undefined;
        resolve(c);
      },
      reject: (e) => {
        clearTimeout(timer);
        helloDone = undefined;
        reject(e);
      },
    };
    input.on('data', onData);
    input.on('end', onGone);
    input.on('close', onGone);
    input.on('error', onGone);
    output.on('error', onGone);
    output.on('close', onGone);
    const helloFrame = Buffer.concat([
      RESYNC_MARKER,
      encodeFrame({ t: 'hello', v: PROTOCOL_VERSION, session }),
    ]);
    send(helloFrame).catch(() => {});
  });
};
