// One agent's live sandboxd session, on the control plane's side of a node (nodes/types.ts): the
// node gives a channel (bytes to and from sandboxd), and this module runs the sandboxd client over
// it, verifies it with a ping, and moves it to the sandbox's link socket when the node offers one.
// Every frame is parsed and validated here, never by the node.
// Invariant: at most one channel per agent from this process; when the channel closes the session
// is forgotten and the next call opens another, which resumes the same sandboxd process; when the
// session fails first (a protocol error), its channel is closed with it.
// Recovery: a sandboxd that does not answer while its sandbox runs (stopped, or stuck) is
// restarted by the node (SIGKILL, start: the workspace is kept, /tmp, jobs and terminals are not)
// and connected once more; one that still does not answer is reported broken; a sandbox that
// vanished is made again by the node's next open. The client's liveness watchdog
// (sandboxd/client.ts) finds one that stops answering mid-session; the provider then reopens with
// `restart` at once, so no call waits for a hello that cannot come.
// The link: when the channel offers one and sandboxd can dial, the session moves from the channel
// to the link (sandboxd/link.ts): no dockerd or containerd-shim between the control plane and
// sandboxd. The channel stays open beside it (its end is how a stopped sandbox is noticed) and goes
// when the link's session does. A link that cannot be made is reported and the session stays on
// the channel.

import type { Readable, Writable } from 'node:stream';
import { SandboxError } from '../../errors.ts';
import type { SandboxdChannel, SandboxdPipe, SandboxNode } from '../nodes/types.ts';
import { WORKSPACE_ROOT } from '../paths.ts';
import type { SandboxdEgress, SandboxdFs } from '../sandboxd/client.ts';
import type { Sandbox, SandboxJobs, SandboxLimits, SandboxStdio, SandboxTerminals } from '../types.ts';

/** What the provider needs from host/sandbox/sandboxd/client.ts (`connectSandboxd`). */
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
  /** The node's channel the session started on (the link's session, when there is one, runs beside it). */
  channel: SandboxdChannel;
}

export interface SessionOptions {
  connect: ConnectSandboxd;
  limits: SandboxLimits;
  /** How long sandboxd has to answer. Default 15 s. */
  readyMs?: number;
  /** A link that could not be made (the session stays on the channel). */
  onLinkError?: (error: unknown) => void;
}

const unavailable = (e: unknown): boolean => e instanceof SandboxError && e.code === 'SANDBOX_UNAVAILABLE';

/**
 * The agent's session on `node`: open a channel, connect and ping; when sandboxd does not answer
 * although its sandbox runs, have the node restart it and try once more (a vanished one the node
 * makes again). `restart`: restart first (sandboxd is known to be unresponsive). Fails with
 * SANDBOX_UNAVAILABLE, closing what it opened.
 */
export const openSession = async (
  node: Pick<SandboxNode<unknown>, 'open' | 'state'>,
  agentId: string,
  options: SessionOptions,
  restart = false,
): Promise<Live> => {
  try {
    return await connectChannel(await node.open(agentId, { restart }), options);
  } catch (e) {
    if (restart || !unavailable(e)) throw e;
    const state = await node.state(agentId).catch(() => 'stopped' as const);
    if (state === 'stopped') throw e;
    try {
      return await connectChannel(await node.open(agentId, { restart: state === 'running' }), options);
    } catch (again) {
      throw new SandboxError(
        'SANDBOX_UNAVAILABLE',
        `sandboxd did not answer, even after its sandbox was restarted (${(again as Error).message}); the sandbox is broken: delete the agent and create it again.`,
        { cause: again, data: { agentId } },
      );
    }
  }
};

/**
 * Connect over `channel`, verify with a ping (racing the channel's end and `readyMs`), and move to
 * the link when the channel offers one. Closes the channel when it fails.
 */
export const connectChannel = async (channel: SandboxdChannel, options: SessionOptions): Promise<Live> => {
  const { connect, limits } = options;
  const readyMs = options.readyMs ?? 15_000;
  try {
    const overChannel = (): Promise<SandboxdSession> | SandboxdSession =>
      connect({
        input: channel.input,
        output: channel.output,
        root: WORKSPACE_ROOT,
        maxReadBytes: limits.maxReadBytes,
        maxOutputBytes: limits.maxOutputBytes,
      });
    let session = await overChannel();
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
      channel.closed.then(() => {
        throw new SandboxError(
          'SANDBOX_UNAVAILABLE',
          'The sandbox container closed its stdio before sandboxd answered (did it exit?).',
        );
      }),
    ]).finally(() => clearTimeout(timer));
    if (channel.link && session.dial) {
      try {
        session = await within(overLink(session, channel, options), readyMs, 'the link took too long');
      } catch (e) {
        options.onLinkError?.(e);
        // sandboxd may have moved its session to the link already: a new hello brings it back.
        await session.close();
        session = await overChannel();
        await session.ping();
      }
    }
    // A connection that failed (a protocol error: anything in the container can write garbage to
    // sandboxd's stdout) is never used again, so its channel goes with it: the next call opens
    // afresh, and there is never more than one channel per sandbox.
    const release = (): void => channel.close();
    void session.closed?.then(release, release);
    return { session, channel };
  } catch (e) {
    channel.close();
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
 * The session over the sandbox's link: the node listens for sandboxd's dial, sandboxd dials (told
 * the token over `attached`, which is then closed), and a session opens on the link. Fails, leaving
 * nothing open but `attached`, when any step does.
 */
const overLink = async (
  attached: SandboxdSession,
  channel: SandboxdChannel,
  options: SessionOptions,
): Promise<SandboxdSession> => {
  const offer = await (channel.link as NonNullable<SandboxdChannel['link']>)();
  let pipe: SandboxdPipe;
  try {
    [pipe] = await Promise.all([offer.accepted, attached.dial?.(offer.token)]);
  } catch (e) {
    // The token's connection may have come although the dial's answer failed: it goes too.
    void offer.accepted.then(
      (p) => p.close(),
      () => {},
    );
    throw e;
  } finally {
    offer.close();
  }
  try {
    const session = await options.connect({
      input: pipe.input,
      output: pipe.output,
      root: WORKSPACE_ROOT,
      maxReadBytes: options.limits.maxReadBytes,
      maxOutputBytes: options.limits.maxOutputBytes,
    });
    const end = (): void => pipe.close();
    void session.closed?.then(end, end);
    await session.ping();
    await attached.close();
    return session;
  } catch (e) {
    pipe.close();
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
  live.channel.close();
};
