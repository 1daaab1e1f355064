// sandboxd's side of the spawner (the python3 loop in spawner-script.ts): starts it once, asks it to
// start commands, opens the commands' FIFOs by the names it reports (Node 18 cannot receive
// descriptors over a unix socket, and the spawner's /proc/<pid>/fd is closed to us once both run
// apart from the agent, identity.ts) and hands them out as sockets, with the exit status it reports.
// States: idle (not started, or died or hung and may be restarted) → starting → ready; off when
// python3 is missing, the FIFO probe fails, it sent garbage, it died too often, or after stop().
// `spawn()` returns undefined unless ready: the caller then starts the command itself.
// Invariants: nothing the spawner sends can throw out of here; a command whose spawner died is
// still waited for (until its pid is gone; the exit status is then unknown: code and signal null);
// a request the spawner never took (no `got`: it died first, or was already dead but not yet
// reaped) rejects with SpawnNotTaken, so the caller starts it another way instead of failing; a
// spawn the spawner does not answer in time rejects, and a command it leaves a zombie for seconds
// gets it killed, so a stuck (or stopped) spawner never holds execs.

import { type ChildProcess, spawn as nodeSpawn } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
} from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { WireError } from '../../sandbox-wire/errors.ts';
import { type RunAs, SETPRIV } from './identity.ts';
import { SPAWNER_SCRIPT } from './spawner-script.ts';

export interface SpawnRequest {
  file: string;
  args: string[];
  /** Working directory (an existing real path). */
  cwd: string;
  /** The command's whole environment. */
  env: NodeJS.ProcessEnv;
  /** Whether the caller will write to stdin; if not, the command reads EOF at once. */
  stdin: boolean;
  /** Who it runs as (identity.ts). Default the agent. */
  as?: RunAs;
}
export interface Exit {
  code: number | null;
  signal: string | null;
}
export interface Spawned {
  pid: number;
  /** Present when the request asked for stdin. */
  stdin: Socket | undefined;
  stdout: Socket;
  stderr: Socket;
  exit: Promise<Exit>;
}

export interface SpawnerOptions {
  /** The interpreter. Default the system's /usr/bin/python3 (the image's), else `python3` on PATH. */
  python?: string;
  /** Longest wait for the spawner's answer to a spawn (or for it to start) before it is killed as stuck. Default 10000 ms. */
  answerTimeoutMs?: number;
  /** Unexpected deaths tolerated (each followed by a restart at the next spawn) before giving up. Default 10. */
  maxRestarts?: number;
  /**
   * Where the spawner makes its FIFOs: in a container the root-owned drop box of mode 1733
   * (identity.ts `makeDropBox`). Default: a private temporary directory made at the first start.
   */
  box?: string;
  log?: (line: string) => void;
}

/** The spawner never took this request: nothing was started, so the caller may start it itself. */
export class SpawnNotTaken extends Error {}

type Pending = {
  req: SpawnRequest;
  /** The spawner said it read the request (and may have started the command). */
  got: boolean;
  resolve: (s: Spawned) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
};
type Running = { pid: number; resolve: (e: Exit) => void };
type Message = Record<string, unknown>;

const MAX_LINE = 64 * 1024;
/** Not a version manager's shim on PATH: a shim is often a bash script that sources BASH_ENV. */
const SYSTEM_PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const WATCHDOG_MS = 1000;
const WATCHDOG_CHECKS = 3;
const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
const isPid = (v: unknown): v is number => Number.isInteger(v) && (v as number) > 1;
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};
const zombie = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
};
const killGroup = (pid: number): void => {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone already
  }
};

export const createSpawner = (options: SpawnerOptions = {}) => {
  const { python = SYSTEM_PYTHON, answerTimeoutMs = 10_000, maxRestarts = 10 } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`sandboxd: spawner: ${line}\n`));
  let state: 'idle' | 'starting' | 'ready' | 'off' = 'idle';
  let child: ChildProcess | undefined;
  let spawnerPid = 0;
  let deaths = 0;
  let nextId = 1;
  let startTimer: NodeJS.Timeout | undefined;
  let box = options.box;
  let ownBox = false;
  const pending = new Map<number, Pending>();
  const running = new Map<number, Running>();
  // A command that stays a zombie is one the spawner does not reap (stopped, or stuck): kill the
  // spawner, so that its commands are waited for the other way and the calls end.
  let watchdog: NodeJS.Timeout | undefined;
  const unreaped = new Map<number, number>(); // pid -> checks it has been seen a zombie at
  const watch = (): void => {
    if (running.size === 0) {
      clearInterval(watchdog);
      watchdog = undefined;
      unreaped.clear();
      return;
    }
    for (const { pid } of running.values()) {
      const seen = zombie(pid) ? (unreaped.get(pid) ?? 0) + 1 : 0;
      unreaped.set(pid, seen);
      if (seen >= WATCHDOG_CHECKS) {
        log(`does not reap pid ${pid}; killing it`);
        child?.kill('SIGKILL');
        return;
      }
    }
  };

  const write = (m: Message): void => {
    child?.stdin?.write(`${JSON.stringify(m)}\n`);
  };
  /** A FIFO name the spawner reported: one random name right inside our box, nothing else. */
  const isFifo = (v: unknown): v is string =>
    typeof v === 'string' && posix.dirname(v) === box && /^[0-9a-f]{32}$/.test(posix.basename(v));
  const openFifo = (name: string, flags: number): number =>
    openSync(name, flags | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  const giveUp = (why: string): void => {
    if (state !== 'off') log(`${why}; exec falls back to child_process.spawn`);
    state = 'off';
    child?.kill('SIGKILL');
  };

  /** The spawner is up: check that its pipes can be opened through /proc before using it. */
  const onReady = (m: Message): void => {
    if (!isPid(m.pid) || !isFifo(m.probe)) {
      giveUp('bad hello');
      return;
    }
    spawnerPid = m.pid;
    try {
      const r = openFifo(m.probe, constants.O_RDONLY);
      const buf = Buffer.alloc(2);
      const n = readSync(r, buf, 0, 2, null);
      closeSync(r);
      if (n !== 2 || buf.toString() !== 'ok') throw new Error('probe FIFO did not hold "ok"');
    } catch (e) {
      giveUp(`cannot open its FIFOs (${(e as Error).message})`);
      return;
    }
    write({ t: 'release', id: 0 });
    clearTimeout(startTimer);
    state = 'ready';
  };

  const onSpawned = (m: Message, p: Pending): void => {
    const fifos = m.fifos as unknown[];
    if (
      !isPid(m.pid) ||
      !Array.isArray(fifos) ||
      fifos.length !== 3 ||
      !fifos.slice(1).every(isFifo) ||
      !(isFifo(fifos[0]) || (fifos[0] === '' && !p.req.stdin))
    ) {
      p.reject(new WireError('TOOL_FAILED', 'The spawner sent a malformed answer.'));
      giveUp('malformed answer');
      return;
    }
    const pid = m.pid;
    const [inName, outName, errName] = fifos as [string, string, string];
    const opened: number[] = [];
    try {
      opened.push(openFifo(outName, constants.O_RDONLY));
      opened.push(openFifo(errName, constants.O_RDONLY));
      if (p.req.stdin) opened.push(openFifo(inName, constants.O_WRONLY));
    } catch (e) {
      for (const fd of opened) closeSync(fd);
      write({ t: 'release', id: m.id });
      killGroup(pid);
      p.reject(new WireError('TOOL_FAILED', `Could not open the command's pipes: ${(e as Error).message}`));
      return;
    }
    write({ t: 'release', id: m.id });
    const [outFd, errFd, inFd] = opened as [number, number, number | undefined];
    const exit = new Promise<Exit>((resolve) => running.set(m.id as number, { pid, resolve }));
    if (!watchdog) {
      watchdog = setInterval(watch, WATCHDOG_MS);
      watchdog.unref();
    }
    p.resolve({
      pid,
      stdin: inFd === undefined ? undefined : new Socket({ fd: inFd, readable: false, writable: true }),
      stdout: new Socket({ fd: outFd, readable: true, writable: false }),
      stderr: new Socket({ fd: errFd, readable: true, writable: false }),
      exit,
    });
  };

  const onMessage = (m: Message): void => {
    if (m.t === 'ready') {
      if (state === 'starting') onReady(m);
      return;
    }
    const id = m.id as number;
    if (m.t === 'got') {
      const p = pending.get(id);
      if (p) p.got = true;
      return;
    }
    if (m.t === 'exit') {
      const r = running.get(id);
      running.delete(id);
      if (r) unreaped.delete(r.pid);
      r?.resolve({
        code: Number.isInteger(m.code) ? (m.code as number) : null,
        signal: typeof m.signal === 'string' ? m.signal : null,
      });
      return;
    }
    const p = pending.get(id);
    if (!p) return;
    pending.delete(id);
    clearTimeout(p.timer);
    if (m.t === 'spawned') {
      onSpawned(m, p);
      return;
    }
    const code = typeof m.code === 'string' ? m.code : 'ESPAWN';
    const error = Object.assign(
      new Error(`spawn ${p.req.file} ${code}: ${String(m.message).slice(0, 500)}`),
      {
        code,
      },
    );
    p.reject(error);
  };

  const onDeath = (proc: ChildProcess, why: string): void => {
    if (proc !== child) return;
    child = undefined;
    clearTimeout(startTimer);
    for (const p of pending.values()) {
      clearTimeout(p.timer);
      p.reject(
        p.got
          ? new WireError('TOOL_FAILED', 'The command could not be started (the spawner stopped); try again.')
          : new SpawnNotTaken('the spawner stopped before it read the request'),
      );
    }
    pending.clear();
    // Commands it started run on; wait for each to end, with its exit status lost.
    for (const r of running.values()) {
      const poll = setInterval(() => {
        if (alive(r.pid)) return;
        clearInterval(poll);
        r.resolve({ code: null, signal: null });
      }, 50);
    }
    running.clear();
    if (state === 'off') return;
    deaths++;
    if (deaths > maxRestarts) {
      giveUp(`died ${deaths} times (last: ${why})`);
      return;
    }
    log(`stopped (${why}); restarting at the next exec`);
    state = 'idle';
  };

  const start = (): void => {
    if (state === 'off') return; // stopped before a deferred start ran
    state = 'starting';
    let proc: ChildProcess;
    try {
      // argv0 and the short -c keep `ps` readable and `pkill -f python` away from it.
      if (!box) {
        box = mkdtempSync(join(tmpdir(), 'sandboxd-spawner-'));
        ownBox = true;
      }
      proc = nodeSpawn(python, ['-I', '-S', '-c', 'exec(open(3).read())', box, SETPRIV], {
        argv0: 'sandboxd-spawner',
        cwd: '/',
        // Its own environment is not its commands' (each request carries theirs): nothing of ours.
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
        stdio: ['pipe', 'pipe', 'inherit', 'pipe'],
      });
    } catch (e) {
      giveUp(`could not start ${python}: ${(e as Error).message}`);
      return;
    }
    child = proc;
    proc.on('error', (e) => {
      if (proc.pid !== undefined) return; // a failed kill, not a death: 'exit' reports deaths
      const code = (e as NodeJS.ErrnoException).code;
      giveUp(code === 'ENOENT' ? `${python} not found` : `could not start ${python}: ${e.message}`);
      onDeath(proc, e.message);
    });
    // 'close', not 'exit': by then every event it wrote (a `spawned` among them) has been read.
    proc.on('close', (code, sig) => onDeath(proc, sig ?? `exit code ${code}`));
    for (const s of proc.stdio) s?.on('error', () => {}); // EPIPE once it is gone: 'exit' handles it
    const script = proc.stdio[3] as NodeJS.WritableStream | null;
    script?.end(SPAWNER_SCRIPT);
    let buf = '';
    proc.stdout?.setEncoding('utf8');
    proc.stdout?.on('data', (chunk: string) => {
      buf += chunk;
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const m = JSON.parse(line) as unknown;
          if (typeof m === 'object' && m !== null) onMessage(m as Message);
        } catch {
          // not one of ours: skip the line
        }
        nl = buf.indexOf('\n');
      }
      if (buf.length > MAX_LINE) giveUp('sent an overlong line');
    });
    startTimer = setTimeout(() => {
      log(`not ready after ${answerTimeoutMs} ms; killing it`);
      proc.kill('SIGKILL');
    }, answerTimeoutMs);
  };

  return {
    /** Start the spawner now rather than at the first spawn. */
    start(): void {
      if (state === 'idle') start();
    },
    /** Start a command through the spawner; undefined when it is not ready (start it yourself). */
    spawn(req: SpawnRequest): Promise<Spawned> | undefined {
      if (state === 'idle') {
        // After the caller's own spawn: forking sandboxd twice in one turn would delay its command.
        state = 'starting';
        setImmediate(start);
      }
      if (state !== 'ready') return undefined;
      const id = nextId++;
      return new Promise<Spawned>((resolve, reject) => {
        const timer = setTimeout(() => {
          const got = pending.get(id)?.got;
          pending.delete(id);
          reject(
            got
              ? new WireError('TOOL_FAILED', 'The spawner did not answer; try again.')
              : new SpawnNotTaken('the spawner did not take the request'),
          );
          log(`no answer in ${answerTimeoutMs} ms; killing it`);
          child?.kill('SIGKILL');
        }, answerTimeoutMs);
        pending.set(id, { req, got: false, resolve, reject, timer });
        write({
          t: 'spawn',
          id,
          argv: [req.file, ...req.args].map(b64),
          cwd: b64(req.cwd),
          env: Object.entries(req.env).flatMap(([k, v]) => (v === undefined ? [] : [[b64(k), b64(v)]])),
          stdin: req.stdin,
          server: req.as === 'server',
        });
      });
    },
    get state() {
      return state;
    },
    /** The spawner's pid (0 before it is ready); for tests. */
    get pid() {
      return spawnerPid;
    },
    /** Stop the spawner for good (it kills the commands it started). */
    stop(): void {
      state = 'off';
      child?.stdin?.end();
      if (ownBox && box) {
        const dir = box;
        child?.once('close', () => rmSync(dir, { recursive: true, force: true }));
        if (!child) rmSync(dir, { recursive: true, force: true });
      }
    },
  };
};

export type Spawner = ReturnType<typeof createSpawner>;
