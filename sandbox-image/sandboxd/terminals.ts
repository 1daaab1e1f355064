// Persistent terminals for sandboxd: each is a program (bash by default) on a pseudo-terminal of its
// own, run by the python PTY helper (pty-helper.ts), with its output kept in a 1 MiB ring of
// absolute offsets. Terminals belong to this process, not to a host session: a re-attached host (a
// new `hello`) lists them with their buffers, and only `close` or the program's own exit ends one.
// Live readers subscribe with `attach`, which streams from a cursor into the ring: a slow host
// never blocks the terminal; it just skips what the ring has dropped (the offsets show the gap).
// This module wires the parts, each over one TerminalsState (terminal-state.ts: the terminals, what
// one reports): terminal-process.ts starts and closes a terminal's program; terminal-output.ts
// reads and streams its output; the calls that open, list, write to, resize, signal and close
// terminals are here.
// Invariants: at most MAX_RUNNING terminals run at once and MAX_KEPT are remembered (ended ones are
// forgotten oldest first); a terminal's status becomes `exited` once, after its last output is in
// the ring; every waiter and subscriber hears about each append and about the end; a running
// terminal's name is unique, and two opens of one name with `reuse` make one terminal.

import { constants } from 'node:os';
import { WireError } from '../../sandbox-wire/errors.ts';
import { termAttach, termRead } from './terminal-output.ts';
import { closeTerminal, dims, killSession, start } from './terminal-process.ts';
import { get, info, running, type TerminalsState } from './terminal-state.ts';
import { type Args, bool, optStr, str } from './util.ts';
import type { Workspace } from './workspace.ts';

const MAX_WRITE_BYTES = 1024 * 1024;
/** Input the helper has not taken yet beyond which writes are refused (the program is not reading). */
const MAX_QUEUED_INPUT = 4 * 1024 * 1024;
export const TERMINAL_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGKILL', 'SIGTSTP', 'SIGHUP', 'SIGQUIT', 'SIGCONT'];

export function createTerminals(ws: Workspace, log: (line: string) => void) {
  const s: TerminalsState = { ws, log, terminals: new Map(), opening: new Map() };
  return {
    termOpen: (args: Args) => termOpen(s, args),
    termList: async () => ({
      terminals: [...s.terminals.values()].sort((a, b) => a.startedAt - b.startedAt).map(info),
    }),
    termWrite: (args: Args) => termWrite(s, args),
    termRead: (args: Args, signal: AbortSignal) => termRead(s, args, signal),
    termResize: (args: Args) => termResize(s, args),
    termSignal: (args: Args) => termSignal(s, args),
    termClose: async (args: Args) => {
      const t = get(s, args);
      await closeTerminal(s, t);
      return info(t);
    },
    termAttach: (args: Args, io: Parameters<typeof termAttach>[2], signal: AbortSignal) =>
      termAttach(s, args, io, signal),
    /** Kill every terminal (when sandboxd runs outside a container and its host goes away). */
    killAll(): void {
      for (const t of s.terminals.values()) {
        if (t.pid !== null) killSession(t.pid);
        t.helper.kill('SIGKILL');
      }
    },
  };
}

async function termOpen(s: TerminalsState, args: Args) {
  const name = optStr(args, 'name');
  if (name !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(name))
    throw new WireError(
      'INVALID_ARGUMENTS',
      'A terminal name is 1-64 letters, digits, dots, dashes or underscores.',
    );
  if (name === undefined) return info(await start(s, args));
  const pending = s.opening.get(name);
  if (pending && bool(args, 'reuse')) return info(await pending);
  const same = [...s.terminals.values()].find((t) => t.name === name && t.status === 'running');
  if (same && bool(args, 'reuse')) return info(same);
  if (same || pending)
    throw new WireError(
      'CONFLICT',
      `A terminal named ${name} is already running${same ? ` (${same.id})` : ''}.`,
      {
        data: { id: same?.id },
      },
    );
  const started = start(s, args);
  s.opening.set(name, started);
  try {
    return info(await started);
  } finally {
    s.opening.delete(name);
  }
}

async function termWrite(s: TerminalsState, args: Args) {
  const t = running(get(s, args));
  const data = Buffer.from(str(args, 'data'), 'base64');
  if (data.length > MAX_WRITE_BYTES)
    throw new WireError('PAYLOAD_TOO_LARGE', `One write carries at most ${MAX_WRITE_BYTES} bytes.`);
  if ((t.helper.stdin?.writableLength ?? 0) > MAX_QUEUED_INPUT)
    throw new WireError(
      'LIMIT_EXCEEDED',
      `Terminal ${t.id} is not reading its input; wait, or send a signal (SIGINT) to its program.`,
    );
  t.helper.stdin?.write(data);
  return { bytes: data.length };
}

async function termResize(s: TerminalsState, args: Args) {
  const t = running(get(s, args));
  const { cols, rows } = dims(args, t.cols, t.rows);
  t.control.write(`resize ${rows} ${cols}\n`);
  t.cols = cols;
  t.rows = rows;
  return info(t);
}

async function termSignal(s: TerminalsState, args: Args) {
  const t = running(get(s, args));
  const name = str(args, 'signal');
  const num = TERMINAL_SIGNALS.includes(name)
    ? constants.signals[name as keyof typeof constants.signals]
    : undefined;
  if (num === undefined)
    throw new WireError('INVALID_ARGUMENTS', `signal must be one of ${TERMINAL_SIGNALS.join(', ')}.`);
  t.control.write(`signal ${num}\n`);
  return info(t);
}
