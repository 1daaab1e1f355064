// The host-side sandboxd client's shapes: what connectSandboxd (client.ts) takes and returns. Its
// own module so the parts of the client (client-fs.ts, client-exec.ts, ...) can name them without an
// import circle through client.ts, which re-exports them.

import type { Readable, Writable } from 'node:stream';
import type { SandboxError } from '../../errors.ts';
import type {
  ExecOptions,
  ExecResult,
  SandboxFs,
  SandboxJobs,
  SandboxStdio,
  SandboxTerminals,
} from '../types.ts';
import type { HelloInfo } from './connection.ts';
import type { StreamHandle } from './streams.ts';

export interface ConnectSandboxdOptions {
  /** sandboxd's stdout (for a container: the demuxed stdout of its attach stream). */
  input: Readable;
  /** sandboxd's stdin (for a container: the attach stream). */
  output: Writable;
  /** Workspace root inside the sandbox; must equal sandboxd's. Default '/workspace'. */
  root?: string;
  /** How long to wait for the hello answer. Default 10000. */
  timeoutMs?: number;
  /** Default per-call deadline for file operations. Default 60000. */
  callTimeoutMs?: number;
  /** Largest read without an explicit `length`, and the cap on any read. Default 10 MiB; at most one frame's MAX_BINARY_BYTES. */
  maxReadBytes?: number;
  /** Cap per stream on exec output kept (and streamed). Default 1 MiB. */
  maxOutputBytes?: number;
  /** Longest wait for a liveness ping's answer while calls are in flight; 0 disables. Default 10000. */
  livenessMs?: number;
  /** Longest a transfer waits for sandboxd's data or credit before it fails. Default callTimeoutMs. */
  streamStallMs?: number;
}

/** SandboxFs plus what only sandboxd offers: appends and ranged reads, for streamed transfers. */
export interface SandboxdFs extends SandboxFs {
  /**
   * Appends to an existing regular file (never creates one, never follows a symlink), then sets
   * `mode` when given. One call carries at most MAX_BINARY_BYTES.
   */
  appendFile(path: string, data: Uint8Array, options?: { mode?: number }): Promise<void>;
  /**
   * `length` bytes of a regular file from `offset` (fewer at its end, none past it) with the file's
   * size at that moment, confined as readFile is but not bound by maxReadBytes. `offset` and `length`
   * are integers, `length` at most MAX_BINARY_BYTES; anything else is INVALID_ARGUMENTS.
   */
  readRange(path: string, offset: number, length: number): Promise<{ data: Buffer; size: number }>;
  /**
   * Only when sandboxd speaks streams (its hello says so): up to `length` bytes of a regular file
   * from `offset`, confined as readRange, in data frames with read-ahead and flow control: what
   * the host holds is one window whatever the size, and a consumer that stops (return()) cancels
   * the read in sandboxd. Yields fewer bytes only when the file ends sooner.
   */
  readStream?(path: string, offset: number, length: number): AsyncGenerator<Buffer>;
  /**
   * Only when sandboxd speaks streams: replaces the file at `path` with `source`'s bytes, sent in
   * data frames within sandboxd's credit and renamed into place by sandboxd once all arrived (a
   * failed or abandoned upload leaves the old file). `mode` defaults to the replaced file's (0o644
   * for a new one). Resolves with the bytes written.
   */
  writeStream?(path: string, source: AsyncIterable<Uint8Array>, options?: { mode?: number }): Promise<number>;
}

/** sandboxd's egress proxy (sandbox-image/sandboxd/egress.ts), as the host takes its connections. */
export interface SandboxdEgress {
  /**
   * Waits for the next connection to the sandbox's proxy and carries its bytes both ways on a
   * stream of its own (no stall limit: a tunnel may idle). `result` settles when it closed.
   * Outside the liveness watchdog: a waiting accept is not a call in flight.
   */
  accept(signal?: AbortSignal): { io: StreamHandle; result: Promise<{ bytesIn: number; bytesOut: number }> };
  /** Adds a CA certificate (PEM) to the bundle the sandbox's processes trust (SSL_CERT_FILE and friends). */
  trust(pem: string): Promise<void>;
}

export interface SandboxdClient {
  readonly fs: SandboxdFs;
  /** Only when sandboxd speaks streams. */
  readonly egress?: SandboxdEgress;
  readonly jobs: SandboxJobs;
  readonly terminals: SandboxTerminals;
  /** Programs on pipes (stdio MCP servers), ended with this connection. */
  readonly stdio: SandboxStdio;
  /** What sandboxd said in its hello: its pid, root and Node version. */
  readonly info: HelloInfo;
  /** Resolves with the reason once the connection is gone (closed, lost, or a protocol error). */
  readonly closed: Promise<SandboxError>;
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** One round trip; resolves with its duration in milliseconds. */
  ping(): Promise<number>;
  /**
   * Only when sandboxd can (`info.link`): asks it to connect the host's link socket with `token`
   * (64 hex digits; link.ts). Resolves once it connected and sent its preface.
   */
  dial?(token: string): Promise<void>;
  /** Streams (bulk transfers) open on this connection: 0 once every transfer ended or was abandoned and answered. */
  readonly openStreams: number;
  /** Detach: pending calls reject with SANDBOX_UNAVAILABLE; the streams stay open. */
  close(): void;
}
