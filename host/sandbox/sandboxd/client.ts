// Host-side client of sandboxd: SandboxFs, exec and SandboxJobs over one framed RPC connection
// (connection.ts). Every path is confined before it is sent (and again by sandboxd, which also
// refuses to follow symlinks out of the root). Output that sandboxd streams is capped too, since
// nothing sandboxd says is trusted.
// The streams belong to the caller (the docker provider): `close()` detaches, it never ends them.
// This module wires the parts, each in its own module: client-types.ts holds the shapes (exported
// from here too); liveness.ts is the watchdog every call but an egress accept goes through;
// client-state.ts is what the parts share (the connection, limits, and the checks around a call);
// client-fs.ts is SandboxdFs, with client-streams.ts its bulk transfers; client-exec.ts is exec and
// SandboxJobs; terminals.ts and stdio.ts the terminals and programs on pipes.

import { MAX_BINARY_BYTES } from '../../../sandbox-wire/protocol.ts';
import { createResolver } from '../paths.ts';
import { createClientJobs, exec } from './client-exec.ts';
import { createClientFs } from './client-fs.ts';
import type { ClientState } from './client-state.ts';
import type { ConnectSandboxdOptions, SandboxdClient, SandboxdEgress } from './client-types.ts';
import { openConnection } from './connection.ts';
import { watchLiveness } from './liveness.ts';
import { createStdioClient } from './stdio.ts';
import { createTerminalClient } from './terminals.ts';

export type { ConnectSandboxdOptions, SandboxdClient, SandboxdEgress, SandboxdFs } from './client-types.ts';
export { isUnresponsive } from './liveness.ts';

/**
 * The most output of one stream of one command the host keeps, whatever cap it is given: the limits
 * of a sandbox on a remote node come from the node's answers (find, ensure), and a hostile node
 * naming a cap of petabytes would have the control plane hold what its sandboxd streams. The most
 * any node allows (DOCKER_DEFAULT_MAXIMA.maxOutputBytes).
 */
export const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

export const connectSandboxd = async (options: ConnectSandboxdOptions): Promise<SandboxdClient> => {
  const resolve = createResolver(options.root ?? '/workspace');
  const root = resolve('.');
  const callTimeoutMs = options.callTimeoutMs ?? 60_000;
  const raw = await openConnection({
    input: options.input,
    output: options.output,
    root,
    helloTimeoutMs: options.timeoutMs ?? 10_000,
    streamStallMs: options.streamStallMs ?? callTimeoutMs,
  });
  const conn = watchLiveness(raw, options.livenessMs ?? 10_000);
  const plain = { timeoutMs: callTimeoutMs };
  const s: ClientState = {
    conn,
    raw,
    resolve,
    root,
    callTimeoutMs,
    maxReadBytes: Math.min(options.maxReadBytes ?? 10 * 1024 * 1024, MAX_BINARY_BYTES),
    maxOutputBytes: Math.min(options.maxOutputBytes ?? 1024 * 1024, MAX_OUTPUT_BYTES),
    plain,
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
    fs: createClientFs(s),
    ...(egress === undefined ? {} : { egress }),
    jobs: createClientJobs(s),
    terminals: createTerminalClient(conn, resolve, callTimeoutMs),
    stdio: createStdioClient(conn, resolve, callTimeoutMs),
    info: conn.hello,
    closed: conn.closed,
    exec: (command, opts) => exec(s, command, opts),
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
