// Every op's handler: the table from the wire's op names to the modules that serve them (fsops.ts,
// search.ts, exec.ts, jobs.ts, terminals.ts, stdio.ts, transfer.ts, egress.ts, link.ts), with the
// output callbacks of the calls that stream (exec, termAttach, stdioOpen) bound to their session.
// Invariants: every op of the wire has exactly one handler (the Record's type); streamed output of
// a call goes out only for the session that made the call (send() drops the rest).
import { WireError } from '../../sandbox-wire/errors.ts';
import type { Op } from '../../sandbox-wire/protocol.ts';
import type { createEgressProxy } from './egress.ts';
import { runExec } from './exec.ts';
import type { createFsOps } from './fsops.ts';
import type { createJobs } from './jobs.ts';
import { dialLink } from './link.ts';
import type { createSearchOps } from './search.ts';
import { addSocket } from './server-links.ts';
import { type Handler, type ServerState, send } from './server-state.ts';
import type { createStdio } from './stdio.ts';
import type { createTerminals } from './terminals.ts';
import type { createTransfers } from './transfer.ts';
import type { Workspace } from './workspace.ts';

/** What serves the ops, made once at start (server.ts). */
export interface ServerParts {
  ws: Workspace;
  fsOps: ReturnType<typeof createFsOps>;
  search: ReturnType<typeof createSearchOps>;
  jobs: Awaited<ReturnType<typeof createJobs>>;
  terms: ReturnType<typeof createTerminals>;
  stdio: ReturnType<typeof createStdio>;
  transfers: ReturnType<typeof createTransfers>;
  egress: ReturnType<typeof createEgressProxy>;
}

export function createHandlers(s: ServerState, parts: ServerParts): Record<Op, Handler> {
  const { ws, fsOps, search, jobs, terms, stdio, transfers, egress } = parts;
  const { drainWaiters } = s;
  return {
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
            send(s, ctx.session, { t: 'out', id: ctx.id, stream, data: data.toString('base64') }),
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
            send(s, ctx.session, { t: 'tout', id: ctx.id, offset, data: data.toString('base64') }),
          onDrain: (fn) => drainWaiters.push(fn),
        },
        ctx.signal,
      ),
    stdioOpen: (args, ctx) =>
      stdio.stdioOpen(
        args,
        {
          send: (stream, data) =>
            send(s, ctx.session, { t: 'out', id: ctx.id, stream, data: data.toString('base64') }),
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
      const socket = await dialLink(s.linkPath, args.token);
      if (ctx.signal.aborted) {
        socket.destroy();
        throw new WireError('TOOL_FAILED', 'The session that asked for this link has ended.');
      }
      addSocket(s, socket);
      return {};
    },
  };
}
