// One agent container's live connection: attach (before start when the container is not running),
// hand the demuxed streams to the sandboxd client, verify with a ping. Invariant: at most one
// attachment per container from this process; when the socket closes the session is forgotten and
// the next call re-attaches, which resumes the same sandboxd process; when the session fails first
// (a protocol error), its socket is destroyed with it.
// Recovery: a sandboxd that does not answer while its container runs (stopped, or stuck) is
// restarted with its container (SIGKILL, start: the workspace is kept, /tmp, jobs and terminals are
// not) and connected once more; one that still does not answer is reported broken. The client's
// liveness watchdog (sandboxd/client.ts) finds one that stops answering mid-session; the provider
// then reopens with `restart` at once, so no call waits for a hello that cannot come.

import type { Readable, Writable } from 'node:stream';
import type Docker from 'dockerode';
import { SandboxError } from '../../errors.ts';
import { WORKSPACE_ROOT } from '../paths.ts';
import type { SandboxdEgress, SandboxdFs } from '../sandboxd/client.ts';
import type { Sandbox, SandboxJobs, SandboxLimits, SandboxStdio, SandboxTerminals } from '../types.ts';
import { type Attachment, attach } from './attach.ts';
import { fromDocker, isNotModified } from './errors.ts';

/** What the docker provider needs from host/sandbox/sandboxd/client.ts (`connectSandboxd`). */
export interface SandboxdSession {
  fs: SandboxdFs;
  exec: Sandbox['exec'];
  jobs: SandboxJobs;
  /** Persistent terminals (sandboxd has them; test doubles may not). */
  terminals?: SandboxTerminals;
  /** Programs on pipes (sandboxd has them; test doubles may not). */
  stdio?: SandboxStdio;
  /** The sandbox's egress proxy connections (sandboxd speaking streams; test doubles may not). */
  egress?: SandboxdEgress;
  ping(): Promise<unknown>;
  close(): Promise<void> | void;
  /** Settles when the connection is gone (protocol error, socket closed). */
  readonly closed?: Promise<unknown>;
}

export interface ConnectOptions {
  input: Readable;
  output: Writable;
  root: string;
  maxReadBytes: number;
  maxOutputBytes: number;
}

export type ConnectSandboxd = (options: ConnectOptions) => Promise<SandboxdSession> | SandboxdSession;

export interface Live {
  session: SandboxdSession;
  attachment: Attachment;
}

/** SIGKILL the container (a stopped sandboxd included) and wait until it has stopped. */
const stopNow = async (container: Docker.Container): Promise<void> => {
  try {
    await container.stop({ t: 0 });
  } catch (e) {
    if (!isNotModified(e)) throw fromDocker(e, 'Restarting the sandbox', { container: container.id });
  }
};

/**
 * Attach, start if needed, connect and ping; when sandboxd does not answer although its container
 * runs, restart the container and try once more. `restart`: restart first (sandboxd is known to
 * be unresponsive). `created`: the container was just created and never started, so the first try
 * asks the engine nothing before attaching. Fails with SANDBOX_UNAVAILABLE, detaching on failure.
 */
export const openSession = async (
  container: Docker.Container,
  connect: ConnectSandboxd,
  limits: SandboxLimits,
  readyMs = 15_000,
  options: { restart?: boolean; created?: boolean } = {},
): Promise<Live> => {
  if (options.restart) await stopNow(container);
  try {
    return await openOnce(container, connect, limits, readyMs, options.created === true && !options.restart);
  } catch (e) {
    if (options.restart || !(e instanceof SandboxError) || e.code !== 'SANDBOX_UNAVAILABLE') throw e;
    const running = await container.inspect().then(
      (i) => i.State.Running,
      () => false,
    );
    if (!running) throw e;
    await stopNow(container);
    try {
      return await openOnce(container, connect, limits, readyMs);
    } catch (again) {
      throw new SandboxError(
        'SANDBOX_UNAVAILABLE',
        `sandboxd did not answer, even after its sandbox was restarted (${(again as Error).message}); the sandbox is broken: delete the agent and create it again.`,
        { cause: again, data: { container: container.id } },
      );
    }
  }
};

const openOnce = async (
  container: Docker.Container,
  connect: ConnectSandboxd,
  limits: SandboxLimits,
  readyMs: number,
  created = false,
): Promise<Live> => {
  let running = false;
  if (!created) {
    try {
      running = (await container.inspect()).State.Running;
    } catch (e) {
      throw fromDocker(e, 'Inspecting the sandbox', { container: container.id });
    }
  }
  const attachment = await attach(container);
  try {
    if (!running) {
      try {
        await container.start();
      } catch (e) {
        if (!isNotModified(e)) throw fromDocker(e, 'Starting the sandbox', { container: container.id });
      }
    }
    const session = await connect({
      input: attachment.stdout,
      output: attachment.stdin,
      root: WORKSPACE_ROOT,
      maxReadBytes: limits.maxReadBytes,
      maxOutputBytes: limits.maxOutputBytes,
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      session.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new SandboxError(
                'SANDBOX_UNAVAILABLE',
                `sandboxd did not answer within ${readyMs} ms; the sandbox image may be broken.`,
              ),
            ),
          readyMs,
        );
      }),
      attachment.closed.then(() => {
        throw new SandboxError(
          'SANDBOX_UNAVAILABLE',
          'The sandbox container closed its stdio before sandboxd answered (did it exit?).',
        );
      }),
    ]).finally(() => clearTimeout(timer));
    // A connection that failed (a protocol error: anything in the container can write garbage to
    // sandboxd's stdout) is never used again, so its socket goes with it: the next call attaches
    // afresh, and there is never more than one attach socket per container.
    const release = (): void => attachment.close();
    void session.closed?.then(release, release);
    return { session, attachment };
  } catch (e) {
    attachment.close();
    throw e;
  }
};

export const closeLive = async (live: Live | undefined): Promise<void> => {
  if (!live) return;
  try {
    await live.session.close();
  } catch {
    // Detaching must never fail; the socket is destroyed below either way.
  }
  live.attachment.close();
};
