// Persistent terminals for sandboxd: each is a program (bash by default) on a pseudo-terminal of its
// own, run by the python PTY helper (pty-helper.ts), with its output kept in a 1 MiB ring of
// absolute offsets. Terminals belong to this process, not to a host session: a re-attached host (a
// new `hello`) lists them with their buffers, and only `close` or the program's own exit ends one.
// Live readers subscribe with `attach`, which streams from a cursor into the ring: a slow host
// never blocks the terminal; it just skips what the ring has dropped (the offsets show the gap).
// Invariants: at most MAX_RUNNING terminals run at once and MAX_KEPT are remembered (ended ones are
// forgotten oldest first); a terminal's status becomes `exited` once, after its last output is in
// the ring; every waiter and subscriber hears about each append and about the end.
// Whose rc files a terminal's shell reads: the agent's. Its environment is childEnv (exec.ts): HOME
// is the agent's home (the image's /home/agent, whose .bashrc is the distribution's skeleton, as
// read-only as the rest of the image's root; locally an empty directory), never the home of whoever
// started sandboxd, and none of sandboxd's own BASH_ENV, ENV, PROMPT_COMMAND, TERM or LC_ALL; TERM
// is xterm-256color unless the caller sets it. So an interactive `bash` here reads /etc/bash.bashrc
// and the agent's ~/.bashrc, as a user's login terminal would; the persistent shell of the minimal
// preset asks for `bash --noprofile --norc` and reads none. The program runs with all three of the
// agent's ids (pty-helper.ts), the helper itself apart from the agent (identity.ts).

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import type { Writable } from 'node:stream';
import { WireError } from '../../sandbox-wire/errors.ts';
import type { TerminalInfo } from '../../sandbox-wire/terminal.ts';
import { childEnv, workdir } from './exec.ts';
import { PTY_HELPER } from './pty-helper.ts';
import { ByteRing } from './ring.ts';
import { type Args, bool, env, optInt, optStr, sleep, str } from './util.ts';
import type { Workspace } from './workspace.ts';

export const RING_BYTES = 1024 * 1024;
const MAX_RUNNING = 16;
const MAX_KEPT = 32;
const MAX_READ_BYTES = 1024 * 1024;
const DEFAULT_READ_BYTES = 64 * 1024;
const MAX_WRITE_BYTES = 1024 * 1024;
/** Input the helper has not taken yet beyond which writes are refused (the program is not reading). */
const MAX_QUEUED_INPUT = 4 * 1024 * 1024;
const STREAM_CHUNK = 64 * 1024;
const MAX_WAIT_MS = 60 * 60 * 1000;
const START_TIMEOUT_MS = 10_000;
/** The system python (the image's; also sidesteps slow version-manager shims when run locally). */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
export const TERMINAL_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGKILL', 'SIGTSTP', 'SIGHUP', 'SIGQUIT', 'SIGCONT'];

/** A live terminal: the fields it reports (TerminalInfo, offsets and busy derived on demand) plus its plumbing. */
interface Terminal extends Omit<TerminalInfo, 'startOffset' | 'endOffset' | 'busy'> {
  ring: ByteRing;
  /** Where a read without an offset starts: the end of the previous read. */
  cursor: number;
  helper: ChildProcess;
  control: Writable;
  /** Told about every append and about the end. */
  listeners: Set<() => void>;
  ended: Promise<void>;
}

export interface TerminalStreamIo {
  /** Send one chunk of output at its absolute offset; false means "wait for drain". */
  send(offset: number, data: Buffer): boolean;
  onDrain(fn: () => void): void;
}

const notFound = (id: string): WireError =>
  new WireError('TERMINAL_NOT_FOUND', `No terminal ${JSON.stringify(id)}; list terminals to see their ids.`, {
    data: { id },
  });
const signalName = (n: number): string | null =>
  Object.entries(constants.signals).find(([, v]) => v === n)?.[0] ?? null;
const dims = (args: Args, fallbackCols: number, fallbackRows: number) => {
  const cols = optInt(args, 'cols', fallbackCols);
  const rows = optInt(args, 'rows', fallbackRows);
  if (cols < 1 || cols > 1000 || rows < 1 || rows > 1000)
    throw new WireError('INVALID_ARGUMENTS', 'cols and rows must be between 1 and 1000.');
  return { cols, rows };
};
const commandOf = (args: Args): string[] => {
  const v = args.command;
  if (v === undefined || v === null) return ['bash'];
  if (
    !Array.isArray(v) ||
    v.length === 0 ||
    v.length > 64 ||
    !v.every((a) => typeof a === 'string' && a.length <= 4096 && !a.includes('\0'))
  )
    throw new WireError('INVALID_ARGUMENTS', 'Argument command must be a non-empty array of strings.');
  return v as string[];
};

/**
 * Whether a job other than the program itself holds the terminal's foreground (a command is running
 * in the shell), from field 8 (tpgid) of /proc/PID/stat. False where /proc cannot tell.
 */
const busyOf = (t: Terminal): boolean => {
  if (t.status !== 'running' || t.pid === null) return false;
  try {
    const stat = readFileSync(`/proc/${t.pid}/stat`, 'utf8');
    const tpgid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[5]);
    return tpgid > 0 && tpgid !== t.pid;
  } catch {
    return false;
  }
};

/** SIGKILL every process of session `sid` (a terminal's program and all it started, jobs included). */
const killSession = (sid: number): void => {
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]) === sid)
        process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone meanwhile, or not ours
    }
  }
};

export const createTerminals = (ws: Workspace, log: (line: string) => void) => {
  const terminals = new Map<string, Terminal>();
  /** Opens in progress by name, so two opens of one name (with reuse) make one terminal. */
  const opening = new Map<string, Promise<Terminal>>();

  const info = (t: Terminal) => ({
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
  });
  const get = (args: Args): Terminal => {
    const id = str(args, 'id');
    const t = terminals.get(id);
    if (!t) throw notFound(id);
    return t;
  };
  const notify = (t: Terminal): void => {
    for (const fn of [...t.listeners]) fn();
  };
  /** Resolves at the next append or end, after `ms`, or when `signal` aborts. */
  const change = (t: Terminal, ms: number, signal?: AbortSignal): Promise<void> => {
    const ac = new AbortController();
    const wake = (): void => ac.abort();
    t.listeners.add(wake);
    signal?.addEventListener('abort', wake, { once: true });
    return sleep(ms, ac.signal).finally(() => {
      t.listeners.delete(wake);
      signal?.removeEventListener('abort', wake);
    });
  };
  const running = (t: Terminal): Terminal => {
    if (t.status !== 'running')
      throw new WireError('CONFLICT', `Terminal ${t.id} has exited; open a new one.`, {
        data: { id: t.id },
      });
    return t;
  };
  const makeRoom = (): void => {
    const all = [...terminals.values()];
    if (all.filter((t) => t.status === 'running').length >= MAX_RUNNING)
      throw new WireError(
        'LIMIT_EXCEEDED',
        `At most ${MAX_RUNNING} terminals can run at once; close one first.`,
      );
    const ended = all.filter((t) => t.status !== 'running').sort((a, b) => a.startedAt - b.startedAt);
    while (terminals.size >= MAX_KEPT && ended.length > 0) terminals.delete((ended.shift() as Terminal).id);
  };

  const start = async (args: Args): Promise<Terminal> => {
    const command = commandOf(args);
    const { cols, rows } = dims(args, 80, 24);
    const { abs, real } = await workdir(ws, optStr(args, 'cwd'));
    const echo = args.echo !== false;
    makeRoom();
    const helper = spawn(
      PYTHON,
      ['-c', PTY_HELPER, String(rows), String(cols), echo ? '1' : '0', ...command],
      {
        cwd: real,
        env: { TERM: 'xterm-256color', ...childEnv(env(args, 'env')) },
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      },
    );
    const control = helper.stdio[3] as Writable;
    const t: Terminal = {
      id: `terminal-${randomBytes(5).toString('hex')}`,
      name: optStr(args, 'name') ?? null,
      command,
      cwd: abs,
      cols,
      rows,
      pid: null,
      status: 'running',
      exitCode: null,
      signal: null,
      startedAt: Date.now(),
      endedAt: null,
      ring: new ByteRing(RING_BYTES),
      cursor: 0,
      helper,
      control,
      listeners: new Set(),
      ended: Promise.resolve(),
    };
    let statusCode: number | undefined;
    let stderr = '';
    let started: (() => void) | undefined;
    const pidKnown = new Promise<void>((resolve) => {
      started = resolve;
    });
    helper.stderr?.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString('utf8')).slice(-8192);
      for (;;) {
        const nl = stderr.indexOf('\n');
        if (nl === -1) break;
        const line = stderr.slice(0, nl);
        stderr = stderr.slice(nl + 1);
        const m = /^(pid|status) (-?\d+)$/.exec(line);
        if (m?.[1] === 'pid') {
          t.pid = Number(m[2]);
          started?.();
        } else if (m?.[1] === 'status') statusCode = Number(m[2]);
        else if (line.trim() !== '') log(`terminal ${t.id}: ${line.slice(0, 500)}`);
      }
    });
    helper.stdout?.on('data', (b: Buffer) => {
      t.ring.append(b);
      notify(t);
    });
    for (const s of [helper.stdin, control]) s?.on('error', () => {}); // EPIPE once the helper is gone
    let spawnError: Error | undefined;
    t.ended = new Promise<void>((resolve) => {
      helper.once('error', (e) => {
        spawnError = e;
      });
      helper.once('close', (code) => {
        t.status = 'exited';
        t.endedAt = Date.now();
        const s = statusCode ?? (code === null ? null : code);
        t.exitCode = s !== null && s >= 0 ? s : null;
        t.signal = s !== null && s < 0 ? signalName(-s) : null;
        started?.();
        notify(t);
        resolve();
      });
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      pidKnown,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, START_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (t.pid === null) {
      helper.kill('SIGKILL');
      const why = spawnError?.message ?? (stderr.trim().slice(0, 500) || 'no answer from the PTY helper');
      throw new WireError('TOOL_FAILED', `Could not open a terminal (python3 PTY helper): ${why}`);
    }
    terminals.set(t.id, t);
    return t;
  };

  const closeTerminal = async (t: Terminal): Promise<void> => {
    if (t.status === 'running') {
      t.control.write('hangup\n');
      await Promise.race([t.ended, sleep(1000)]);
    }
    // Whatever the hangup left (jobs that ignore SIGHUP, their children) goes too.
    if (t.pid !== null) killSession(t.pid);
    if (t.status === 'running') {
      t.helper.kill('SIGKILL');
      await Promise.race([t.ended, sleep(1000)]);
    }
    terminals.delete(t.id);
  };

  return {
    async termOpen(args: Args) {
      const name = optStr(args, 'name');
      if (name !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(name))
        throw new WireError(
          'INVALID_ARGUMENTS',
          'A terminal name is 1-64 letters, digits, dots, dashes or underscores.',
        );
      if (name === undefined) return info(await start(args));
      const pending = opening.get(name);
      if (pending && bool(args, 'reuse')) return info(await pending);
      const same = [...terminals.values()].find((t) => t.name === name && t.status === 'running');
      if (same && bool(args, 'reuse')) return info(same);
      if (same || pending)
        throw new WireError(
          'CONFLICT',
          `A terminal named ${name} is already running${same ? ` (${same.id})` : ''}.`,
          {
            data: { id: same?.id },
          },
        );
      const started = start(args);
      opening.set(name, started);
      try {
        return info(await started);
      } finally {
        opening.delete(name);
      }
    },

    async termList() {
      return { terminals: [...terminals.values()].sort((a, b) => a.startedAt - b.startedAt).map(info) };
    },

    async termWrite(args: Args) {
      const t = running(get(args));
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
    },

    async termRead(args: Args, signal: AbortSignal) {
      const t = get(args);
      const asked = args.offset === undefined || args.offset === null ? t.cursor : optInt(args, 'offset', 0);
      const count = optInt(args, 'count', DEFAULT_READ_BYTES, MAX_READ_BYTES);
      const waitMs = optInt(args, 'waitMs', 0, MAX_WAIT_MS);
      if (waitMs > 0 && t.status === 'running' && asked >= t.ring.end) await change(t, waitMs, signal);
      const { data, offset } = t.ring.read(asked, count);
      const nextOffset = offset + data.length;
      t.cursor = Math.max(t.cursor, nextOffset);
      return {
        ...info(t),
        data: data.toString('base64'),
        offset,
        nextOffset,
        dropped: Math.max(0, t.ring.start - asked),
      };
    },

    async termResize(args: Args) {
      const t = running(get(args));
      const { cols, rows } = dims(args, t.cols, t.rows);
      t.control.write(`resize ${rows} ${cols}\n`);
      t.cols = cols;
      t.rows = rows;
      return info(t);
    },

    async termSignal(args: Args) {
      const t = running(get(args));
      const name = str(args, 'signal');
      const num = TERMINAL_SIGNALS.includes(name)
        ? constants.signals[name as keyof typeof constants.signals]
        : undefined;
      if (num === undefined)
        throw new WireError('INVALID_ARGUMENTS', `signal must be one of ${TERMINAL_SIGNALS.join(', ')}.`);
      t.control.write(`signal ${num}\n`);
      return info(t);
    },

    async termClose(args: Args) {
      const t = get(args);
      await closeTerminal(t);
      return info(t);
    },

    /** Streams the terminal's output from `offset` (default: the oldest byte held) until it ends. */
    async termAttach(args: Args, io: TerminalStreamIo, signal: AbortSignal) {
      const t = get(args);
      let cursor = optInt(args, 'offset', t.ring.start);
      let blocked = false;
      let wake: () => void = () => {};
      const pump = (): void => {
        while (!blocked && !signal.aborted && cursor < t.ring.end) {
          const { data, offset } = t.ring.read(cursor, STREAM_CHUNK);
          cursor = offset + data.length;
          if (!io.send(offset, data)) {
            blocked = true;
            io.onDrain(() => {
              blocked = false;
              pump();
              wake();
            });
          }
        }
      };
      t.listeners.add(pump);
      try {
        for (;;) {
          pump();
          if (signal.aborted || (t.status !== 'running' && cursor >= t.ring.end)) break;
          await new Promise<void>((resolve) => {
            const done = (): void => {
              t.listeners.delete(done);
              signal.removeEventListener('abort', done);
              resolve();
            };
            wake = done;
            t.listeners.add(done);
            signal.addEventListener('abort', done, { once: true });
          });
        }
      } finally {
        t.listeners.delete(pump);
      }
      return info(t);
    },

    /** Kill every terminal (when sandboxd runs outside a container and its host goes away). */
    killAll(): void {
      for (const t of terminals.values()) {
        if (t.pid !== null) killSession(t.pid);
        t.helper.kill('SIGKILL');
      }
    },
  };
};
