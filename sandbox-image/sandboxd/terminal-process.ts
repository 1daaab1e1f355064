// A terminal's program: started on a pseudo-terminal of its own by the python PTY helper
// (pty-helper.ts), which reports the program's pid and exit status on stderr and takes resizes,
// signals and the hangup on a control pipe; its output goes into a 1 MiB ring of absolute offsets.
// Closing hangs it up, then kills its whole session (jobs that ignore SIGHUP included).
// Invariants: at most MAX_RUNNING terminals run at once and MAX_KEPT are remembered (ended ones are
// forgotten oldest first); a terminal is kept only once its pid is known, and a helper that does not
// report one within START_TIMEOUT_MS is killed; the status becomes `exited` once, when the helper
// closes, after its last output is in the ring.
// Whose rc files a terminal's shell reads: the agent's. Its environment is childEnv (exec.ts): HOME
// is the agent's home (the image's /home/agent, whose .bashrc is the distribution's skeleton, as
// read-only as the rest of the image's root; locally an empty directory), never the home of whoever
// started sandboxd, and none of sandboxd's own BASH_ENV, ENV, PROMPT_COMMAND, TERM or LC_ALL; TERM
// is xterm-256color unless the caller sets it. So an interactive `bash` here reads /etc/bash.bashrc
// and the agent's ~/.bashrc, as a user's login terminal would; the persistent shell of the minimal
// preset asks for `bash --noprofile --norc` and reads none. The program runs with all three of the
// agent's ids, taken by setpriv with the ids named (identity.ts asAgent, as jobs take them), never
// derived from the helper's own ids (pty-helper.ts says why); the helper itself runs apart from
// the agent (identity.ts).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import type { Writable } from 'node:stream';
import { WireError } from '../../sandbox-wire/errors.ts';
import { childEnv, workdir } from './exec.ts';
import { asAgent } from './identity.ts';
import { PTY_HELPER } from './pty-helper.ts';
import { ByteRing } from './ring.ts';
import { notify, type Terminal, type TerminalsState } from './terminal-state.ts';
import { type Args, env, optInt, optStr, sleep } from './util.ts';

export const RING_BYTES = 1024 * 1024;
const MAX_RUNNING = 16;
const MAX_KEPT = 32;
const START_TIMEOUT_MS = 10_000;
/** The system python (the image's; also sidesteps slow version-manager shims when run locally). */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

function signalName(n: number): string | null {
  return Object.entries(constants.signals).find(([, v]) => v === n)?.[0] ?? null;
}

export function dims(args: Args, fallbackCols: number, fallbackRows: number): { cols: number; rows: number } {
  const cols = optInt(args, 'cols', fallbackCols);
  const rows = optInt(args, 'rows', fallbackRows);
  if (cols < 1 || cols > 1000 || rows < 1 || rows > 1000)
    throw new WireError('INVALID_ARGUMENTS', 'cols and rows must be between 1 and 1000.');
  return { cols, rows };
}

function commandOf(args: Args): string[] {
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
}

/** SIGKILL every process of session `sid` (a terminal's program and all it started, jobs included). */
export function killSession(sid: number): void {
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
}

function makeRoom(s: TerminalsState): void {
  const { terminals } = s;
  const all = [...terminals.values()];
  if (all.filter((t) => t.status === 'running').length >= MAX_RUNNING)
    throw new WireError(
      'LIMIT_EXCEEDED',
      `At most ${MAX_RUNNING} terminals can run at once; close one first.`,
    );
  const ended = all.filter((t) => t.status !== 'running').sort((a, b) => a.startedAt - b.startedAt);
  while (terminals.size >= MAX_KEPT && ended.length > 0) terminals.delete((ended.shift() as Terminal).id);
}

/** A new terminal, kept once its program runs (its pid known). */
export async function start(s: TerminalsState, args: Args): Promise<Terminal> {
  const command = commandOf(args);
  const { cols, rows } = dims(args, 80, 24);
  const { abs, real } = await workdir(s.ws, optStr(args, 'cwd'));
  const echo = args.echo !== false;
  makeRoom(s);
  const program = asAgent(command[0] as string, command.slice(1));
  const helper = spawn(
    PYTHON,
    ['-c', PTY_HELPER, String(rows), String(cols), echo ? '1' : '0', program.file, ...program.args],
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
      else if (line.trim() !== '') s.log(`terminal ${t.id}: ${line.slice(0, 500)}`);
    }
  });
  helper.stdout?.on('data', (b: Buffer) => {
    t.ring.append(b);
    notify(t);
  });
  for (const pipe of [helper.stdin, control]) pipe?.on('error', () => {}); // EPIPE once the helper is gone
  let spawnError: Error | undefined;
  t.ended = new Promise<void>((resolve) => {
    helper.once('error', (e) => {
      spawnError = e;
    });
    helper.once('close', (code) => {
      t.status = 'exited';
      t.endedAt = Date.now();
      const status = statusCode ?? (code === null ? null : code);
      t.exitCode = status !== null && status >= 0 ? status : null;
      t.signal = status !== null && status < 0 ? signalName(-status) : null;
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
  s.terminals.set(t.id, t);
  return t;
}

/** Hangs the terminal up, kills what is left of its session, and forgets it. */
export async function closeTerminal(s: TerminalsState, t: Terminal): Promise<void> {
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
  s.terminals.delete(t.id);
}
