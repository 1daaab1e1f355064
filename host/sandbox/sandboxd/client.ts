// Host-side client of sandboxd: SandboxFs, exec and SandboxJobs over one framed RPC connection
// (connection.ts). Every path is confined here before it is sent (and again by sandboxd, which also
// refuses to follow symlinks out of the root). Output that sandboxd streams is capped here too, since
// nothing sandboxd says is trusted.
// The streams belong to the caller (the docker provider): `close()` detaches, it never ends them.

import type { Readable, Writable } from 'node:stream';
import { MAX_BINARY_BYTES, MAX_DATA_BYTES } from '../../../sandbox-wire/protocol.ts';
import { SandboxError } from '../../errors.ts';
import { regroup } from '../chunks.ts';
import { createResolver } from '../paths.ts';
import type {
  ExecOptions,
  ExecResult,
  JobInfo,
  JobOutput,
  NoSymlinks,
  ReadOptions,
  SandboxFs,
  SandboxJobs,
  SandboxStdio,
  SandboxTerminals,
} from '../types.ts';
import { type Connection, type HelloInfo, openConnection } from './connection.ts';
import { createStdioClient } from './stdio.ts';
import type { StreamHandle } from './streams.ts';
import { createTerminalClient } from './terminals.ts';

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

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const GRACE_MS = 5000;

const checkEnv = (env: Record<string, string> | undefined): Record<string, string> | undefined => {
  if (env === undefined) return undefined;
  for (const [k, val] of Object.entries(env)) {
    if (!ENV_NAME.test(k) || typeof val !== 'string' || val.includes('\0')) {
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `Environment variable ${JSON.stringify(k)} is not a valid NAME=string pair.`,
      );
    }
  }
  return env;
};

/** Unresponsive sandboxd: what the liveness watchdog fails the connection with. */
export const isUnresponsive = (e: unknown): boolean =>
  e instanceof SandboxError && (e.data as { unresponsive?: unknown } | undefined)?.unresponsive === true;

/**
 * `conn` with a watchdog: while calls are in flight, a ping every `ms` that must be answered within
 * `ms`; an unanswered one fails the connection (isUnresponsive). Pings do not count as calls.
 */
const watchLiveness = (conn: Connection, ms: number): Connection => {
  if (ms <= 0) return conn;
  let inflight = 0;
  let timer: NodeJS.Timeout | undefined;
  const probe = (): void => {
    timer = undefined;
    if (inflight === 0) return;
    conn.call('ping', {}, { timeoutMs: ms }).then(
      () => {
        if (inflight > 0 && !timer) timer = setTimeout(probe, ms).unref();
      },
      (e: unknown) => {
        if (
          !(e instanceof SandboxError) ||
          e.code !== 'SANDBOX_UNAVAILABLE' ||
          !/did not answer/.test(e.message)
        )
          return; // the connection failed for another reason, already reported
        conn.close(
          new SandboxError(
            'SANDBOX_UNAVAILABLE',
            `sandboxd stopped answering (no answer to a liveness ping within ${ms} ms); the sandbox is being restarted, try again.`,
            { data: { unresponsive: true } },
          ),
        );
      },
    );
  };
  void conn.closed.then(() => clearTimeout(timer));
  return {
    get hello() {
      return conn.hello;
    },
    closed: conn.closed,
    close: (reason) => conn.close(reason),
    get openStreams() {
      return conn.openStreams;
    },
    call(op, args, options) {
      inflight++;
      if (!timer) timer = setTimeout(probe, ms).unref();
      return conn.call(op, args, options).finally(() => {
        inflight--;
      });
    },
    stream(op, args, options) {
      const opened = conn.stream(op, args, options);
      inflight++;
      if (!timer) timer = setTimeout(probe, ms).unref();
      opened.result
        .finally(() => {
          inflight--;
        })
        .catch(() => {});
      return opened;
    },
  };
};

export const connectSandboxd = async (options: ConnectSandboxdOptions): Promise<SandboxdClient> => {
  const resolve = createResolver(options.root ?? '/workspace');
  const root = resolve('.');
  const callTimeoutMs = options.callTimeoutMs ?? 60_000;
  const maxReadBytes = Math.min(options.maxReadBytes ?? 10 * 1024 * 1024, MAX_BINARY_BYTES);
  const maxOutputBytes = options.maxOutputBytes ?? 1024 * 1024;
  const raw = await openConnection({
    input: options.input,
    output: options.output,
    root,
    helloTimeoutMs: options.timeoutMs ?? 10_000,
    streamStallMs: options.streamStallMs ?? callTimeoutMs,
  });
  const conn = watchLiveness(raw, options.livenessMs ?? 10_000);
  const plain = { timeoutMs: callTimeoutMs };
  /** Binary payload of one write: at most what one frame carries. */
  const payload = (abs: string, data: Uint8Array | string): string => {
    const buf =
      typeof data === 'string'
        ? Buffer.from(data)
        : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    if (buf.length > MAX_BINARY_BYTES) {
      throw new SandboxError(
        'FILE_TOO_LARGE',
        `${abs}: ${buf.length} bytes is more than one write can carry (${MAX_BINARY_BYTES}); upload it as an archive.`,
        { data: { path: abs, size: buf.length } },
      );
    }
    return buf.toString('base64');
  };

  /** An answer that breaks the protocol: sandboxd is not to be trusted any more. */
  const broken = (what: string): SandboxError => {
    conn.close();
    return new SandboxError('SANDBOX_PROTOCOL', `sandboxd ${what}; the connection was closed.`);
  };
  /** The bytes of a read answer; more than was asked for means sandboxd is not to be trusted any more. */
  const atMost = (data: string, most: number): Buffer => {
    const buf = Buffer.from(data, 'base64');
    if (buf.length <= most) return buf;
    throw broken('returned more bytes than asked for');
  };
  /** readFile's arguments: the confined path, the range, and the most bytes an answer may carry. */
  const readArgs = (path: string, opts: ReadOptions, maxBytes: number) => ({
    path: resolve(path),
    offset: Math.max(0, Math.floor(opts.offset ?? 0)),
    length: opts.length === undefined ? undefined : Math.max(0, Math.floor(opts.length)),
    maxBytes,
  });

  const streamed: Pick<SandboxdFs, 'readStream' | 'writeStream'> = raw.hello.streams
    ? {
        async *readStream(path, offset, length) {
          const abs = resolve(path);
          const { io, result } = conn.stream('readStream', { path: abs, offset, length });
          let got = 0;
          for await (const piece of io.incoming) {
            if (piece.length === 0) continue; // a mark: no bytes
            got += piece.length;
            if (got > length) throw broken('sent more bytes than asked for');
            yield piece;
          }
          const { bytes } = await result;
          if (bytes !== got) throw broken(`said it sent ${bytes} bytes but sent ${got}`);
        },
        async writeStream(path, source, opts = {}) {
          const abs = resolve(path);
          const { io, result } = conn.stream('writeStream', { path: abs, mode: opts.mode });
          let sent = 0;
          try {
            // Whole data frames, however small the pieces the source (an HTTP body) comes in,
            // made of those pieces without copying them.
            for await (const parts of regroup(source, MAX_DATA_BYTES)) {
              await io.write(parts);
              for (const part of parts) sent += part.byteLength;
            }
            await io.end();
          } catch (e) {
            io.abandon();
            // sandboxd's own answer (a directory in the way, a full disk) says more than a closed stream.
            const answer = await result.then(
              () => undefined,
              (error: unknown) => error,
            );
            throw e instanceof SandboxError && e.code === 'SANDBOX_PROTOCOL' && answer ? answer : e;
          }
          const { bytes } = await result;
          if (bytes !== sent) throw broken(`wrote ${bytes} bytes of ${sent}`);
          return bytes;
        },
      }
    : {};

  /**
   * The `noSymlinks` argument, asked only of a sandboxd whose hello says it honours it: an older one
   * would ignore it and follow the link, so the write is refused here instead.
   */
  const noSymlinks = (opts: NoSymlinks): { noSymlinks?: true } => {
    if (opts.noSymlinks !== true) return {};
    if (!raw.hello.noSymlinks)
      throw new SandboxError(
        'SANDBOX_UNAVAILABLE',
        "This sandbox's sandboxd predates writes that never follow a symlink, so the service will not write here; recreate the agent's sandbox (delete and create the agent) to get the current one.",
      );
    return { noSymlinks: true };
  };

  const fs: SandboxdFs = {
    ...streamed,
    root,
    resolve,
    async readFile(path, opts = {}) {
      const args = readArgs(path, opts, maxReadBytes);
      const { data } = await conn.call('readFile', args, plain);
      if (data === undefined) throw broken('answered a read without its bytes');
      return atMost(data, Math.min(args.length ?? maxReadBytes, maxReadBytes));
    },
    async readWithStat(path, opts = {}) {
      const asked = opts.maxBytes === undefined ? maxReadBytes : Math.max(0, Math.floor(opts.maxBytes) || 0);
      const most = Math.min(asked, maxReadBytes);
      const args = readArgs(path, opts, most);
      const answer = await conn.call('readFile', { ...args, stat: true }, plain);
      const { data } = answer;
      // A sandboxd from before readWithStat ignores `stat` and answers as readFile does: ask it.
      const stat = answer.stat ?? (await conn.call('stat', { path: args.path }, plain));
      if (data === undefined) return { stat };
      return { stat, data: atMost(data, Math.min(args.length ?? most, most)) };
    },
    async readRange(path, offset, length) {
      const abs = resolve(path);
      for (const [name, value, max] of [
        ['offset', offset, Number.MAX_SAFE_INTEGER],
        ['length', length, MAX_BINARY_BYTES],
      ] as const) {
        if (!Number.isInteger(value) || value < 0 || value > max)
          throw new SandboxError('INVALID_ARGUMENTS', `${name} must be an integer from 0 to ${max}.`, {
            data: { path: abs, [name]: value },
          });
      }
      const { data, size } = await conn.call('readRange', { path: abs, offset, length }, plain);
      return { data: atMost(data, Math.min(length, Math.max(0, size - offset))), size };
    },
    async writeFile(path, data, opts = {}) {
      const abs = resolve(path);
      await conn.call(
        'writeFile',
        { path: abs, data: payload(abs, data), mode: opts.mode, ...noSymlinks(opts) },
        plain,
      );
    },
    async appendFile(path, data, opts = {}) {
      const abs = resolve(path);
      await conn.call('appendFile', { path: abs, data: payload(abs, data), mode: opts.mode }, plain);
    },
    stat: (path) => conn.call('stat', { path: resolve(path) }, plain),
    async exists(path) {
      try {
        await conn.call('stat', { path: resolve(path) }, plain);
        return true;
      } catch (e) {
        if (e instanceof SandboxError && (e.code === 'FILE_NOT_FOUND' || e.code === 'NOT_A_DIRECTORY'))
          return false;
        throw e;
      }
    },
    async list(path) {
      return (await conn.call('list', { path: resolve(path) }, plain)).entries;
    },
    async mkdir(path, opts = {}) {
      await conn.call(
        'mkdir',
        { path: resolve(path), recursive: opts.recursive === true, ...noSymlinks(opts) },
        plain,
      );
    },
    async remove(path, opts = {}) {
      await conn.call(
        'remove',
        { path: resolve(path), recursive: opts.recursive === true, ...noSymlinks(opts) },
        plain,
      );
    },
    async rename(from, to) {
      await conn.call('rename', { from: resolve(from), to: resolve(to) }, plain);
    },
    glob: (pattern, opts = {}) =>
      conn.call(
        'glob',
        { pattern: String(pattern), cwd: resolve(opts.cwd ?? '.'), limit: opts.limit ?? 1000 },
        plain,
      ),
    grep: (pattern, opts = {}) =>
      conn.call(
        'grep',
        {
          pattern: String(pattern),
          path: resolve(opts.path ?? '.'),
          include: opts.include,
          ignoreCase: opts.ignoreCase === true,
          skipIgnored: opts.skipIgnored === true,
          limit: opts.limit ?? 1000,
        },
        plain,
      ),
  };

  const exec = async (command: string, opts: ExecOptions = {}): Promise<ExecResult> => {
    const timeoutMs = opts.timeoutMs ?? 120_000;
    const out = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    const size = { stdout: 0, stderr: 0 };
    let cut = false;
    const onOut = (stream: 'stdout' | 'stderr', data: Buffer): void => {
      const room = maxOutputBytes - size[stream];
      if (room <= 0) {
        cut = true;
        return;
      }
      const chunk = data.length > room ? data.subarray(0, room) : data;
      if (chunk !== data) cut = true;
      out[stream].push(chunk);
      size[stream] += chunk.length;
      (stream === 'stdout' ? opts.onStdout : opts.onStderr)?.(chunk);
    };
    const args = {
      command: String(command),
      cwd: resolve(opts.cwd ?? '.'),
      env: checkEnv(opts.env),
      timeoutMs,
      stdin: opts.stdin,
      maxOutputBytes,
    };
    const value = await conn.call('exec', args, {
      timeoutMs: timeoutMs + GRACE_MS,
      signal: opts.signal,
      onOut,
    });
    return {
      exitCode: value.exitCode,
      stdout: Buffer.concat(out.stdout).toString('utf8'),
      stderr: Buffer.concat(out.stderr).toString('utf8'),
      timedOut: value.timedOut,
      truncated: value.truncated || cut,
      durationMs: value.durationMs,
    };
  };

  const jobs: SandboxJobs = {
    start: (command, opts = {}) =>
      conn.call(
        'jobStart',
        { command: String(command), cwd: resolve(opts.cwd ?? '.'), env: checkEnv(opts.env) },
        plain,
      ),
    async list(): Promise<JobInfo[]> {
      return (await conn.call('jobList', {}, plain)).jobs;
    },
    output(id, opts = {}): Promise<JobOutput> {
      const waitMs = opts.wait ? (opts.timeoutMs ?? 30_000) : 0;
      const args = {
        id: String(id),
        offset: Math.max(0, Math.floor(opts.offset ?? 0)),
        ...(opts.tail === undefined ? {} : { tail: Math.max(1, Math.floor(opts.tail)) }),
        waitMs,
        maxBytes: maxOutputBytes,
      };
      return conn.call('jobOutput', args, { timeoutMs: callTimeoutMs + waitMs, signal: opts.signal });
    },
    kill: (id, signal = 'SIGTERM') => conn.call('jobKill', { id: String(id), signal }, plain),
  };

  const egress: SandboxdEgress | undefined = raw.hello.streams
    ? {
        accept: (signal) => raw.stream('egressAccept', {}, { signal, stallMs: 0 }),
        trust: async (pem) => {
          await conn.call('egressTrust', { pem }, plain);
        },
      }
    : undefined;

  return {
    fs,
    ...(egress === undefined ? {} : { egress }),
    jobs,
    terminals: createTerminalClient(conn, resolve, callTimeoutMs),
    stdio: createStdioClient(conn, resolve, callTimeoutMs),
    info: conn.hello,
    closed: conn.closed,
    exec,
    async ping() {
      const t0 = performance.now();
      await conn.call('ping', {}, plain);
      return performance.now() - t0;
    },
    ...(raw.hello.link
      ? {
          dial: async (token: string) => {
            await conn.call('dial', { token }, plain);
          },
        }
      : {}),
    get openStreams() {
      return conn.openStreams;
    },
    close: () => conn.close(),
  };
};
