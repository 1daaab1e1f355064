// The public face of one RPC session with sandboxd (connection.ts opens it): what the hello said,
// the options of a call and of a stream, and the Connection itself. Types only.
import type { Readable, Writable } from 'node:stream';
import type { Op } from '../../../sandbox-wire/protocol.ts';
import type { SandboxError } from '../../errors.ts';
import type { OpValue } from './schemas.ts';
import type { StreamHandle } from './streams.ts';

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

export interface OpenOptions {
  input: Readable;
  output: Writable;
  root: string;
  helloTimeoutMs: number;
  /** Longest a stream waits for data or credit. Default 60000. */
  streamStallMs?: number;
}
