// sandboxd's session loop: reads frames from the host, dispatches each call to its handler and writes
// the answer. One session at a time: a `hello` (always preceded by a RESYNC marker) starts a new one,
// kills the previous session's running execs and cancels its waits, and from then on answers of the
// old session are dropped, so a re-attached host never sees them under its own request ids.
// This module wires the parts, each over one ServerState (server-state.ts: the session, its link,
// write and send): server-links.ts reads frames from stdin and the link socket and routes them
// (hello, cancel, credit, requests); server-calls.ts runs one call (deadline, stream, answer);
// server-handlers.ts maps each op to the module that serves it.
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

import type { Readable, Writable } from 'node:stream';
import type { Op } from '../../sandbox-wire/protocol.ts';
import { createEgressProxy } from './egress.ts';
import { createFsOps } from './fsops.ts';
import { createJobs } from './jobs.ts';
import { createSearchOps } from './search.ts';
import { createHandlers } from './server-handlers.ts';
import { serve } from './server-links.ts';
import type { Handler, ServerState } from './server-state.ts';
import type { Spawner } from './spawner.ts';
import { createStdio } from './stdio.ts';
import { createStreams } from './streams.ts';
import { createTerminals } from './terminals.ts';
import { createTransfers } from './transfer.ts';
import { warmUp } from './warm-up.ts';
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
  /** Runs a first command of its own after the first answer (warm-up.ts): for the warm pool's sandboxes. */
  warmUp?: Spawner;
}

export async function startServer(options: ServerOptions) {
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
  const egress = createEgressProxy({ log, port: options.proxyPort ?? 0, stateDir: options.stateDir });
  const s: ServerState = {
    log,
    root: ws.root,
    linkPath: options.linkPath,
    opDeadlineMs: options.opDeadlineMs ?? 30_000,
    onFirstAnswer: () => {
      options.onFirstAnswer?.();
      if (options.warmUp) void warmUp(ws, options.warmUp, log, () => s.used);
    },
    startProxy: () => egress.listen(),
    listening: undefined,
    streams: createStreams({ log }),
    // Set just below: the handlers send through this state.
    handlers: {} as Record<Op, Handler>,
    session: 0, // 0: no hello yet
    current: undefined,
    socketLink: undefined,
    firstAnswer: true,
    used: false,
    inflight: new Map(),
    drainWaiters: [],
  };
  s.handlers = createHandlers(s, { ws, fsOps, search, jobs, terms, stdio, transfers, egress });
  serve(s, options.input, { output: options.output, draining: false, close: () => {} });

  return {
    /** Kill every job and terminal this process started (used when running outside a container). */
    killJobs: () => {
      s.socketLink?.close();
      jobs.killAll();
      terms.killAll();
      egress.close();
    },
    /** For tests: the session counter. */
    get session() {
      return s.session;
    },
  };
}
