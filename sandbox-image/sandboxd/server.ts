// sandboxd's session loop: reads frames from the host, dispatches each call to its handler and writes
// the answer. One session at a time: a `hello` (always preceded by a RESYNC marker) starts a new one,
// kills the previous session's running execs and cancels its waits, and from then on answers of the
// old session are dropped, so a re-attached host never sees them under its own request ids.
// Links: frames come over stdin and, once the host asked for it (`dial`, link.ts), over a unix
// socket too. A session belongs to the link its hello came on: its answers go there, and frames
// from any other link are ignored but for a hello (which moves the session to that link). A link
// that closes under its session ends that session (as a new hello would), so nothing waits on a
// dead socket; at most one socket link is open (a new dial closes the previous one).
// Invariants: nothing a request carries can crash this process (every handler's error becomes an
// error answer with a code from the wire's short list, sandbox-wire/errors.ts); a frame we cannot
// parse is logged and skipped up to the next RESYNC; an answer too big for a frame becomes a
// PAYLOAD_TOO_LARGE error; every call but a terminal attach, a stdio program (subscriptions) or a
// stream (readStream, writeStream, egressAccept: paced by the host's credit, streams.ts; egress.ts),
// each ended by a cancel
// or the next session, has a deadline: past it, its signal aborts (stopping ripgrep, walks, waits and
// commands) and it is answered TOOL_TIMEOUT at once, whether or not its handler ever returns, so a
// stuck call never holds up the next one. Data frames of a stream are written only within its
// credit, so the answers of other calls queue behind at most one window of them.

import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { WireError } from '../../sandbox-wire/errors.ts';
import {
  encodeFrame,
  FrameDecoder,
  FrameError,
  LINK_VERSION,
  MAX_DATA_BYTES,
  NO_SYMLINKS_VERSION,
  OPS,
  type Op,
  PROTOCOL_VERSION,
  RESYNC_MARKER,
  STREAMS_VERSION,
} from '../../sandbox-wire/protocol.ts';
import { createEgressProxy } from './egress.ts';
import { runExec } from './exec.ts';
import { createFsOps } from './fsops.ts';
import { createJobs } from './jobs.ts';
import { dialLink } from './link.ts';
import { createSearchOps } from './search.ts';
import { createStdio } from './stdio.ts';
import { createStreams } from './streams.ts';
import { createTerminals } from './terminals.ts';
import { createTransfers, type TransferIo } from './transfer.ts';
import { type Args, wireError } from './util.ts';
import { openWorkspace } from './workspace.ts';

export interface ServerOptions {
  input: Readable;
  output: Writable;
  root: string;
  stateDir: string;
  log: (line: string) => void;
  /** Deadline of a call that does not wait by design (file operations, search, ping). Default 30000. */
  opDeadlineMs?: number;
  /** Port of the egress proxy on 127.0.0.1 (egress.ts). Default 0: any free port (local runs). */
  proxyPort?: number;
  /** The host's link socket (SANDBOXD_LINK): `dial` connects it. Default none: no link. */
  linkPath?: string;
  /**
   * Runs once, just after the first answer to a call is written (the host's ping after its hello:
   * the host then has its sandbox ready), as the egress proxy starts listening. main.ts starts the
   * command spawner there, off that path.
   */
  onFirstAnswer?: () => void;
}

/** The calls that move bytes on a stream of their own (streams.ts). */
const STREAM_OPS: ReadonlySet<Op> = new Set<Op>(['readStream', 'writeStream', 'egressAccept']);
/** The stream calls that take bytes from the host (they grant their whole window at once). */
const RECEIVING_OPS: ReadonlySet<Op> = new Set<Op>(['writeStream', 'egressAccept']);
const noStream = (): never => {
  throw new WireError('INTERNAL', 'This call has no stream.');
};
/** What a call that is not a stream call gets as its stream: nothing it could use. */
const NO_STREAM = {
  sender: { credit: noStream, frame: noStream, send: noStream, end: noStream },
  receiver: { next: noStream, consumed: noStream },
  close: () => {},
};

/** Extra time a waiting call (exec, jobOutput, termRead) gets past the wait it asked for. */
const WAIT_GRACE_MS = 5000;

/** A call's deadline in ms, or undefined for a subscription. `base` bounds calls that do not wait. */
export const deadlineOf = (op: Op, args: Args, base: number): number | undefined => {
  const ms = (name: string, fallback: number): number => {
    const v = args[name];
    return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : fallback;
  };
  // setTimeout fires at once past 2^31-1 ms: clamp (that is 24 days, no deadline in practice).
  const clamp = (n: number): number => Math.min(n, 2 ** 31 - 1);
  switch (op) {
    case 'termAttach':
    case 'stdioOpen':
    case 'readStream':
    case 'writeStream':
    case 'egressAccept':
      return undefined;
    case 'exec':
      return clamp(ms('timeoutMs', 120_000) + WAIT_GRACE_MS);
    case 'jobOutput':
    case 'termRead':
      return clamp(Math.min(ms('waitMs', 0), 60 * 60 * 1000) + base);
    default:
      return clamp(base);
  }
};

/** The answer to a failed call: whatever was thrown, as a code from the wire's list and a message. */
const failure = (id: number, error: unknown): object => ({
  t: 'res',
  id,
  ok: false,
  error: wireError(error),
});

type Handler = (
  args: Args,
  ctx: { id: number; signal: AbortSignal; session: number; io: TransferIo },
) => Promise<object>;

/** Where frames come from and where the answers of a session started on it go. */
interface Link {
  output: Writable;
  /** Its output said "wait for drain" and has not drained yet. */
  draining: boolean;
  close(): void;
}

export const startServer = async (options: ServerOptions) => {
  const { log } = options;
  const ws = await openWorkspace(options.root);
  const fsOps = createFsOps(ws);
  const search = createSearchOps(ws);
  const jobs = await createJobs(ws, options.stateDir);
  // Terminals outlive sessions: a new hello aborts a previous session's attach streams, never a terminal.
  const terms = createTerminals(ws, log);
  // stdio programs (MCP servers) belong to the session that opened them, like execs.
  const stdio = createStdio(ws);
  const transfers = createTransfers(ws);
  const streams = createStreams({ log });
  const egress = createEgressProxy({ log, port: options.proxyPort ?? 0, stateDir: options.stateDir });
  // The proxy starts listening once the first call is answered: writing its CA bundle and listening
  // cost ~60 ms of CPU at boot, which the host's wait for a ready sandbox need not include. Every
  // call but a ping waits for it, so no command ever starts without the proxy's variables.
  let listening: Promise<void> | undefined;
  const listen = (): Promise<void> => {
    listening ??= egress.listen();
    return listening;
  };
  let session = 0; // 0: no hello yet
  /** The link of the current session; undefined before the first hello and after its link closed. */
  let current: Link | undefined;
  /** The socket link, while one is open. */
  let socketLink: Link | undefined;
  let firstAnswer = true;
  const inflight = new Map<number, AbortController>();
  const drainWaiters: Array<() => void> = [];

  const write = (frame: Buffer, done?: () => void): boolean => {
    const link = current;
    if (link === undefined) return true; // nobody is listening
    const ok = link.output.write(frame, done);
    if (!ok && !link.draining) {
      link.draining = true;
      link.output.once('drain', () => {
        link.draining = false;
        if (link === current) for (const fn of drainWaiters.splice(0)) fn();
      });
    }
    return ok;
  };
  /** Forgets the current session: its calls stop and its answers are dropped (a hello's first step). */
  const endSession = (): void => {
    for (const ac of inflight.values()) ac.abort();
    inflight.clear();
    streams.closeAll();
    drainWaiters.length = 0;
    session++;
  };
  const send = (forSession: number, message: object): boolean => {
    if (forSession !== session) return true; // a previous session's output: nobody is listening for it
    try {
      return write(encodeFrame(message));
    } catch (e) {
      if (!(e instanceof FrameError) || !('id' in message)) throw e;
      const tooLarge = new WireError(
        'PAYLOAD_TOO_LARGE',
        `The answer is too large for one frame (${e.message}); ask for less (a smaller limit or length).`,
      );
      return write(encodeFrame(failure((message as { id: number }).id, tooLarge)));
    }
  };

  const handlers: Record<Op, Handler> = {
    ping: async () => ({}),
    readFile: fsOps.readFile,
    readRange: fsOps.readRange,
    writeFile: fsOps.writeFile,
    appendFile: fsOps.appendFile,
    stat: fsOps.stat,
    list: fsOps.list,
    mkdir: fsOps.mkdir,
    remove: fsOps.remove,
    rename: fsOps.rename,
    glob: (args, ctx) => search.glob(args, ctx.signal),
    grep: (args, ctx) => search.grep(args, ctx.signal),
    exec: (args, ctx) =>
      runExec(
        ws,
        args,
        {
          send: (stream, data) =>
            send(ctx.session, { t: 'out', id: ctx.id, stream, data: data.toString('base64') }),
          onDrain: (fn) => drainWaiters.push(fn),
        },
        ctx.signal,
      ),
    jobStart: jobs.jobStart,
    jobList: jobs.jobList,
    jobOutput: (args, ctx) => jobs.jobOutput(args, ctx.signal),
    jobKill: jobs.jobKill,
    termOpen: terms.termOpen,
    termList: terms.termList,
    termWrite: terms.termWrite,
    termRead: (args, ctx) => terms.termRead(args, ctx.signal),
    termResize: terms.termResize,
    termSignal: terms.termSignal,
    termClose: terms.termClose,
    termAttach: (args, ctx) =>
      terms.termAttach(
        args,
        {
          send: (offset, data) =>
            send(ctx.session, { t: 'tout', id: ctx.id, offset, data: data.toString('base64') }),
          onDrain: (fn) => drainWaiters.push(fn),
        },
        ctx.signal,
      ),
    stdioOpen: (args, ctx) =>
      stdio.stdioOpen(
        args,
        {
          send: (stream, data) =>
            send(ctx.session, { t: 'out', id: ctx.id, stream, data: data.toString('base64') }),
          onDrain: (fn) => drainWaiters.push(fn),
        },
        ctx.signal,
        ctx.session,
      ),
    stdioWrite: (args, ctx) => stdio.stdioWrite(args, ctx.session),
    readStream: (args, ctx) => transfers.readStream(args, ctx.io),
    writeStream: (args, ctx) => transfers.writeStream(args, ctx.io),
    egressAccept: (_args, ctx) => egress.egressAccept(ctx.io, ctx.signal),
    egressTrust: (args) => egress.egressTrust(args),
    dial: async (args, ctx) => {
      const socket = await dialLink(options.linkPath, args.token);
      if (ctx.signal.aborted) {
        socket.destroy();
        throw new WireError('TOOL_FAILED', 'The session that asked for this link has ended.');
      }
      addSocket(socket);
      return {};
    },
  };

  const opDeadlineMs = options.opDeadlineMs ?? 30_000;
  const onRequest = async (id: number, op: Op, args: Args): Promise<void> => {
    const mine = session;
    const ac = new AbortController();
    inflight.set(id, ac);
    let answered = false;
    const answer = (message: object): void => {
      if (answered) return;
      answered = true;
      clearTimeout(timer);
      send(mine, message);
      if (firstAnswer) {
        firstAnswer = false;
        setImmediate(() => {
          void listen();
          options.onFirstAnswer?.();
        });
      }
    };
    const limit = deadlineOf(op, args, opDeadlineMs);
    const timer =
      limit === undefined
        ? undefined
        : setTimeout(() => {
            ac.abort();
            log(`${op} passed its ${limit} ms deadline`);
            answer(
              failure(
                id,
                new WireError(
                  'TOOL_TIMEOUT',
                  `${op} did not finish within ${limit} ms and was stopped (a FIFO, a huge file or a huge tree?); narrow it down or use bash.`,
                ),
              ),
            );
          }, limit);
    const io = STREAM_OPS.has(op)
      ? streams.open(
          id,
          ac.signal,
          {
            send: (message) => send(mine, message),
            write: (frame, done) => {
              if (mine === session) write(frame, done);
            },
            ready: () =>
              current === undefined || current.output.writableLength <= MAX_DATA_BYTES || !current.draining
                ? Promise.resolve()
                : new Promise<void>((resolve) => drainWaiters.push(resolve)),
          },
          RECEIVING_OPS.has(op),
        )
      : NO_STREAM;
    try {
      // A ping (the host's first call) and a dial (its second) need no proxy: both are on the way to ready.
      if (op !== 'ping' && op !== 'dial') await listen();
      const value = await handlers[op](args, { id, signal: ac.signal, session: mine, io });
      answer({ t: 'res', id, ok: true, value });
    } catch (e) {
      answer(failure(id, e));
    } finally {
      io.close();
      clearTimeout(timer);
      if (inflight.get(id) === ac) inflight.delete(id);
    }
  };

  const onMessage = (m: Record<string, unknown>, link: Link): void => {
    if (m.t === 'hello') {
      endSession();
      // Another link takes the session: the socket link's host must learn at once, not by silence.
      if (socketLink !== undefined && socketLink !== link) socketLink.close();
      current = link;
      const reply = {
        t: 'hello',
        v: PROTOCOL_VERSION,
        session: String(m.session).slice(0, 64),
        pid: process.pid,
        root: ws.root,
        node: process.version,
        streams: STREAMS_VERSION,
        noSymlinks: NO_SYMLINKS_VERSION,
        ...(options.linkPath ? { link: LINK_VERSION } : {}),
      };
      write(Buffer.concat([RESYNC_MARKER, encodeFrame(reply)]));
      if (m.v !== PROTOCOL_VERSION) log(`host speaks protocol ${String(m.v)}, we speak ${PROTOCOL_VERSION}`);
      return;
    }
    if (session === 0 || link !== current) return; // no session here: nobody to answer
    const id = m.id;
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 1 || id > 2 ** 31) {
      log('frame without a valid id skipped');
      return;
    }
    if (m.t === 'cancel') {
      inflight.get(id)?.abort();
      return;
    }
    if (m.t === 'credit') {
      streams.onCredit(id, m.bytes);
      return;
    }
    if (m.t === 'end') {
      streams.onEnd(id);
      return;
    }
    if (m.t !== 'req') {
      log(`unknown frame type ${String(m.t).slice(0, 32)} skipped`);
      return;
    }
    const op = m.op as Op;
    const args = m.args;
    if (
      !(OPS as readonly string[]).includes(String(op)) ||
      typeof args !== 'object' ||
      args === null ||
      Array.isArray(args)
    ) {
      const unknown = `Unknown operation ${String(op).slice(0, 32)} or malformed args.`;
      send(session, failure(id, new WireError('INVALID_ARGUMENTS', unknown)));
      return;
    }
    void onRequest(id, op, args as Args);
  };

  /** Serves frames from `input`; the answers of a session started there go to `link.output`. */
  const serve = (input: Readable, link: Link): void => {
    const decoder = new FrameDecoder({
      onMessage: (m) => {
        try {
          onMessage(m, link);
        } catch (e) {
          log(`frame handling failed: ${(e as Error).message}`);
        }
      },
      onData: (id, payload) => {
        if (session !== 0 && link === current) streams.onData(id, payload);
      },
      onError: (e) => log(`bad input (${e.message}); skipping to the next hello`),
    });
    input.on('data', (chunk: Buffer) => decoder.push(chunk));
  };

  /** A dialled link socket: it replaces the previous one; its session ends when it closes. */
  const addSocket = (socket: Socket): void => {
    socketLink?.close();
    const link: Link = { output: socket, draining: false, close: () => socket.destroy() };
    socketLink = link;
    socket.on('error', (e) => log(`link: ${e.message}`));
    socket.once('close', () => {
      if (socketLink === link) socketLink = undefined;
      if (current !== link) return;
      endSession();
      current = undefined;
    });
    serve(socket, link);
  };

  serve(options.input, { output: options.output, draining: false, close: () => {} });

  return {
    /** Kill every job and terminal this process started (used when running outside a container). */
    killJobs: () => {
      socketLink?.close();
      jobs.killAll();
      terms.killAll();
      egress.close();
    },
    /** For tests: the session counter. */
    get session() {
      return session;
    },
  };
};
