// What one sandboxd connection holds, in one object its parts (receive.ts, send.ts) take as their
// first argument: the streams, the session's id, the calls waiting for an answer, the hello, the
// write backpressure, and how it fails.
// Invariants: once `failure` is set it never changes, our stream listeners are gone, and every
// pending call, open stream and the hello wait have been rejected with it (fail() runs once);
// late errors on the streams are swallowed from then on, so none can crash the process; nothing
// is read before the resync marker (`synced`) nor, but the hello, before the hello (`hello`).
import type { Readable, Writable } from 'node:stream';
import type { Op } from '../../../sandbox-wire/protocol.ts';
import { SandboxError } from '../../errors.ts';
import type { CallOptions, HelloInfo } from './connection-types.ts';
import type { valueSchemas } from './schemas.ts';
import type { StreamTable } from './streams.ts';

export interface Pending {
  op: Op;
  resolve(value: unknown): void;
  reject(error: SandboxError): void;
  onOut: CallOptions['onOut'];
  onTerm?: CallOptions['onTerm'];
}

export interface ConnState {
  input: Readable;
  output: Writable;
  root: string;
  schemas: ReturnType<typeof valueSchemas>;
  /** This client's hello id: a hello answer with another one is stale, or another client's. */
  session: string;
  pending: Map<number, Pending>;
  nextId: number;
  /** The decoder found the resync marker: frames before it are the previous session's. */
  synced: boolean;
  hello: HelloInfo | undefined;
  failure: SandboxError | undefined;
  /** Set while the output is full: writes wait for its drain. */
  draining: Promise<void> | undefined;
  settleClosed: (e: SandboxError) => void;
  /** The open's wait for the hello, while it waits. */
  helloDone: { resolve(): void; reject(e: SandboxError): void } | undefined;
  streams: StreamTable;
  /** Our listeners on the streams (removed when the connection fails). */
  onData: (chunk: Buffer | string) => void;
  onGone: () => void;
}

function ignore(): void {}

/** Fails the connection once: listeners off, everything waiting rejected with `error`, `closed` settled. */
export function fail(s: ConnState, error: SandboxError): void {
  if (s.failure) return;
  s.failure = error;
  const { input, output, onData, onGone } = s;
  input.off('data', onData);
  input.off('end', onGone);
  input.off('close', onGone);
  input.off('error', onGone);
  output.off('error', onGone);
  output.off('close', onGone);
  // Swallow late stream errors: with our listeners gone, one would crash the process.
  if (input.listenerCount('error') === 0) input.on('error', ignore);
  if (output.listenerCount('error') === 0) output.on('error', ignore);
  for (const p of s.pending.values()) p.reject(error);
  s.pending.clear();
  s.streams.failAll(error);
  s.helloDone?.reject(error);
  s.settleClosed(error);
}

export function protocolError(s: ConnState, why: string): void {
  fail(
    s,
    new SandboxError(
      'SANDBOX_PROTOCOL',
      `sandboxd broke the protocol (${why}); the connection was closed. Reconnect to the sandbox.`,
    ),
  );
}
