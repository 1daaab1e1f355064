// What the parts of one sandboxd client share (client.ts wires them): the connection (behind the
// liveness watchdog) and the raw one, the path resolver, the limits, and the checks every part
// makes before or after a call. Every path is confined (resolve) before it is sent; nothing
// sandboxd says is trusted: an answer that breaks the protocol closes the connection (broken).

import { MAX_BINARY_BYTES } from '../../../sandbox-wire/protocol.ts';
import { SandboxError } from '../../errors.ts';
import type { NoSymlinks, ReadOptions } from '../types.ts';
import type { Connection } from './connection.ts';

export interface ClientState {
  /** The connection behind the liveness watchdog: every call but an egress accept goes here. */
  conn: Connection;
  /** The connection itself: its hello, and egress accepts (outside the watchdog). */
  raw: Connection;
  /** Confines a path to the root (createResolver). */
  resolve: (path: string) => string;
  root: string;
  callTimeoutMs: number;
  maxReadBytes: number;
  maxOutputBytes: number;
  /** The options of a plain call: the default deadline. */
  plain: { timeoutMs: number };
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const checkEnv = (env: Record<string, string> | undefined): Record<string, string> | undefined => {
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

/** Binary payload of one write: at most what one frame carries. */
export const payload = (abs: string, data: Uint8Array | string): string => {
  const buf =
    typeof data === 'string' ? Buffer.from(data) : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
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
export const broken = (s: ClientState, what: string): SandboxError => {
  s.conn.close();
  return new SandboxError('SANDBOX_PROTOCOL', `sandboxd ${what}; the connection was closed.`);
};

/** The bytes of a read answer; more than was asked for means sandboxd is not to be trusted any more. */
export const atMost = (s: ClientState, data: string, most: number): Buffer => {
  const buf = Buffer.from(data, 'base64');
  if (buf.length <= most) return buf;
  throw broken(s, 'returned more bytes than asked for');
};

/** readFile's arguments: the confined path, the range, and the most bytes an answer may carry. */
export const readArgs = (s: ClientState, path: string, opts: ReadOptions, maxBytes: number) => ({
  path: s.resolve(path),
  offset: Math.max(0, Math.floor(opts.offset ?? 0)),
  length: opts.length === undefined ? undefined : Math.max(0, Math.floor(opts.length)),
  maxBytes,
});

/**
 * The `noSymlinks` argument, asked only of a sandboxd whose hello says it honours it: an older one
 * would ignore it and follow the link, so the write is refused here instead.
 */
export const noSymlinks = (s: ClientState, opts: NoSymlinks): { noSymlinks?: true } => {
  if (opts.noSymlinks !== true) return {};
  if (!s.raw.hello.noSymlinks)
    throw new SandboxError(
      'SANDBOX_UNAVAILABLE',
      "This sandbox's sandboxd predates writes that never follow a symlink, so the service will not write here; recreate the agent's sandbox (delete and create the agent) to get the current one.",
    );
  return { noSymlinks: true };
};
