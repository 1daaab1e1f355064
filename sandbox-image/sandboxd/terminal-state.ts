// What sandboxd's terminals hold (terminals.ts wires them), in one object the terminal modules
// (terminal-process.ts, terminal-output.ts) take as their first argument: the terminals by id and
// the opens in progress by name; and how a terminal reads (its TerminalInfo, looked up by id,
// checked running, its listeners told).
// Invariants: a terminal is in `terminals` from the moment its program's pid is known until it is
// closed or forgotten (ended ones, oldest first, past MAX_KEPT); its status becomes `exited` once,
// after its last output is in the ring; every listener hears about each append and about the end.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { WireError } from '../../sandbox-wire/errors.ts';
import type { TerminalInfo } from '../../sandbox-wire/terminal.ts';
import type { ByteRing } from './ring.ts';
import { type Args, str } from './util.ts';
import type { Workspace } from './workspace.ts';

/** A live terminal: the fields it reports (TerminalInfo, offsets and busy derived on demand) plus its plumbing. */
export interface Terminal extends Omit<TerminalInfo, 'startOffset' | 'endOffset' | 'busy'> {
  ring: ByteRing;
  /** Where a read without an offset starts: the end of the previous read. */
  cursor: number;
  helper: ChildProcess;
  control: Writable;
  /** Told about every append and about the end. */
  listeners: Set<() => void>;
  ended: Promise<void>;
}

export interface TerminalsState {
  ws: Workspace;
  log: (line: string) => void;
  terminals: Map<string, Terminal>;
  /** Opens in progress by name, so two opens of one name (with reuse) make one terminal. */
  opening: Map<string, Promise<Terminal>>;
}

/**
 * Whether a job other than the program itself holds the terminal's foreground (a command is running
 * in the shell), from field 8 (tpgid) of /proc/PID/stat. False where /proc cannot tell.
 */
function busyOf(t: Terminal): boolean {
  if (t.status !== 'running' || t.pid === null) return false;
  try {
    const stat = readFileSync(`/proc/${t.pid}/stat`, 'utf8');
    const tpgid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[5]);
    return tpgid > 0 && tpgid !== t.pid;
  } catch {
    return false;
  }
}

export function info(t: Terminal): TerminalInfo {
  return {
    id: t.id,
    name: t.name,
    command: t.command,
    cwd: t.cwd,
    cols: t.cols,
    rows: t.rows,
    pid: t.pid,
    status: t.status,
    exitCode: t.exitCode,
    signal: t.signal,
    startedAt: t.startedAt,
    endedAt: t.endedAt,
    startOffset: t.ring.start,
    endOffset: t.ring.end,
    busy: busyOf(t),
  };
}

/** The terminal `args.id` names, or TERMINAL_NOT_FOUND. */
export function get(s: TerminalsState, args: Args): Terminal {
  const id = str(args, 'id');
  const t = s.terminals.get(id);
  if (!t)
    throw new WireError(
      'TERMINAL_NOT_FOUND',
      `No terminal ${JSON.stringify(id)}; list terminals to see their ids.`,
      {
        data: { id },
      },
    );
  return t;
}

export function running(t: Terminal): Terminal {
  if (t.status !== 'running')
    throw new WireError('CONFLICT', `Terminal ${t.id} has exited; open a new one.`, {
      data: { id: t.id },
    });
  return t;
}

export function notify(t: Terminal): void {
  for (const fn of [...t.listeners]) fn();
}
