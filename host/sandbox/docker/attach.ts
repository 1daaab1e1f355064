// Hijacked attach to a sandbox container's stdio, demultiplexed into plain Node streams for the
// sandboxd client. Attach happens BEFORE start for a fresh container, so no byte sandboxd writes is
// lost. Invariants: `stdout`/`stderr` end when the socket ends (demux never ends them);
// `close()` detaches only: it destroys our socket, the container and its stdin stay open.

import { PassThrough, type Readable, type Writable } from 'node:stream';
import type Docker from 'dockerode';
import { demux } from './demux.ts';
import { fromDocker } from './errors.ts';

export interface Attachment {
  /** sandboxd's stdout: the RPC frames. */
  stdout: Readable;
  /** sandboxd's stderr: diagnostics only, never parsed as frames. */
  stderr: Readable;
  /** sandboxd's stdin. */
  stdin: Writable;
  /** Resolves when the socket closes (detach, container stop, engine gone). */
  closed: Promise<void>;
  close(): void;
}

export const attach = async (container: Docker.Container): Promise<Attachment> => {
  let socket: NodeJS.ReadWriteStream;
  try {
    socket = (await container.attach({
      stream: true,
      stdin: true,
      stdout: true,
      stderr: true,
      hijack: true,
    })) as NodeJS.ReadWriteStream;
  } catch (e) {
    throw fromDocker(e, 'Attaching to the sandbox', { container: container.id });
  }
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  demux(socket as unknown as Readable, stdout, stderr);
  const closed = new Promise<void>((resolve) => {
    const done = (): void => {
      stdout.end();
      stderr.end();
      resolve();
    };
    socket.once('end', done);
    socket.once('close', done);
    socket.once('error', done);
  });
  // stderr is diagnostics; keep it flowing so the socket never stalls on an unread side.
  stderr.resume();
  return {
    stdout,
    stderr,
    stdin: socket as unknown as Writable,
    closed,
    close: () => (socket as unknown as { destroy(): void }).destroy(),
  };
};
