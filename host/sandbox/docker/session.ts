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
// The link: when the container has a link folder (config.ts LINK_MOUNT) and its sandboxd can dial,
// the session moves from the attach stream to a unix socket (sandboxd/link.ts): no dockerd or
// containerd-shim between the control plane and sandboxd. The attach socket stays open beside it
// (its end is how a stopped container is noticed) and goes when the link's session does. A link
// that cannot be made is reported and the session stays on the attach stream.

import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type Docker from 'dockerode';
import { SandboxError } from '../../errors.ts';
import { WORKSPACE_ROOT } from '../paths.ts';
import type { SandboxdEgress, SandboxdFs } from '../sandboxd/client.ts';
import { listenLink } from '../sandboxd/link.ts';
import type { Sandbox, SandboxJobs, SandboxLimits, SandboxStdio, SandboxTerminals } from '../types.ts';
import { type Attachment, attach } from './attach.ts';
import { LINK_SOCKET, linkDirOf } from './config.ts';
import { fromDocker, isNotModified } from './errors.ts';
import { ensureLinkDir } from './links.ts';

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
  /** Only when sandboxd can dial the host's link socket (sandboxd/client.ts). */
  dial?(token: string): Promise<void>;
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

export interface OpenSessionOptions {
  /** Restart first (sandboxd is known to be unresponsive). */
  restart?: boolean;
  /** The container was just created and never started: the first try asks the engine nothing before attaching. */
  created?: boolean;
  /** The container's link folder on this host (config.ts); default: read from its inspect (none when `created`). */
  link?: string;
  /**
   * The provider's folder of link folders: a folder read from an inspect is used only when it lies
   * there (so links off, or moved, means no link for older containers too). Default none: no link.
   */
  links?: string;
  /** A link that could not be made (the session stays on the attach stream). */
  onLinkError?: (error: unknown) => void;
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
  options: OpenSessionOptions = {},
): Promise<Live> => {
  if (options.restart) await stopNow(container);
  try {
    return await openOnce(
      container,
      connect,
      limits,
      readyMs,
      options,
      options.created === true && !options.restart,
    );
  } catch (e) {
    if (options.restart || !(e instanceof SandboxError) || e.code !== 'SANDBOX_UNAVAILABLE') throw e;
    const running = await container.inspect().then(
      (i) => i.State.Running,
      () => false,
    );
    if (!running) throw e;
    await stopNow(container);
    try {
      return await openOnce(container, connect, limits, readyMs, options);
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
  options: OpenSessionOptions,
  created = false,
): Promise<Live> => {
  let running = false;
  let link = options.link;
  if (!created) {
    try {
      const info = await container.inspect();
      running = info.State.Running;
      // Frozen by a pause (pause.ts), maybe before this process started: thawed, its processes kept.
      if (info.State.Paused)
        await container.unpause().catch((e: unknown) => {
          if (!isNotModified(e)) throw e;
        });
      const found = linkDirOf(info);
      if (
        link === undefined &&
        found !== undefined &&
        options.links !== undefined &&
        dirname(found) === options.links
      )
        link = found;
    } catch (e) {
      throw fromDocker(e, 'Inspecting the sandbox', { container: container.id });
    }
  }
  // A folder that went away (a wiped data folder) would fail the start: Docker needs the bind's source.
  if (link !== undefined && !running) await ensureLinkDir(link);
  const attachment = await attach(container);
  try {
    if (!running) {
      try {
        await container.start();
      } catch (e) {
        if (!isNotModified(e)) throw fromDocker(e, 'Starting the sandbox', { container: container.id });
      }
    }
    const overAttach = (): Promise<SandboxdSession> | SandboxdSession =>
      connect({
        input: attachment.stdout,
        output: attachment.stdin,
        root: WORKSPACE_ROOT,
        maxReadBytes: limits.maxReadBytes,
        maxOutputBytes: limits.maxOutputBytes,
      });
    let session = await overAttach();
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
    if (link !== undefined && session.dial) {
      try {
        session = await within(overLink(session, link, connect, limits), readyMs, 'the link took too long');
      } catch (e) {
        options.onLinkError?.(e);
        // sandboxd may have moved its session to the link already: a new hello brings it back.
        await session.close();
        session = await overAttach();
        await session.ping();
      }
    }
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

/** `p`, or a rejection after `ms` (what `p` settles to later is dropped: closed, if a session). */
const within = async (p: Promise<SandboxdSession>, ms: number, why: string): Promise<SandboxdSession> => {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          void p.then(
            (late) => late.close(),
            () => {},
          );
          reject(new SandboxError('SANDBOX_UNAVAILABLE', `${why} (${ms} ms)`));
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
};

/**
 * The session over the container's link socket: listen in its link folder, have sandboxd dial it
 * (over `attached`, which is then closed), and open a session on the socket. Fails, leaving nothing
 * open but `attached`, when any step does.
 */
const overLink = async (
  attached: SandboxdSession,
  dir: string,
  connect: ConnectSandboxd,
  limits: SandboxLimits,
): Promise<SandboxdSession> => {
  const listener = await listenLink(join(dir, LINK_SOCKET));
  let socket: import('node:net').Socket;
  try {
    [socket] = await Promise.all([listener.accepted, attached.dial?.(listener.token)]);
  } catch (e) {
    // The token's connection may have come although the dial's answer failed: it goes too.
    void listener.accepted.then(
      (s) => s.destroy(),
      () => {},
    );
    throw e;
  } finally {
    listener.close();
  }
  try {
    const session = await connect({
      input: socket,
      output: socket,
      root: WORKSPACE_ROOT,
      maxReadBytes: limits.maxReadBytes,
      maxOutputBytes: limits.maxOutputBytes,
    });
    const end = (): void => {
      socket.destroy();
    };
    void session.closed?.then(end, end);
    await session.ping();
    await attached.close();
    return session;
  } catch (e) {
    socket.destroy();
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
