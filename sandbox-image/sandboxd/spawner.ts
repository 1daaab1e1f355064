// sandboxd's side of the spawner (the python3 loop in spawner-script.ts): starts it once, asks it to
// start commands, opens the commands' pipes through /proc/<spawner>/fd/<fd> (Node 18 cannot receive
// descriptors over a unix socket; opening a pipe through /proc gives a new descriptor on the same
// pipe) and hands them out as sockets, with the exit status the spawner reports.
// States: idle (not started, or died or hung and may be restarted) → starting → ready; off when
// python3 is missing, the /proc probe fails, it sent garbage, it died too often, or after stop().
// `spawn()` returns undefined unless ready: the caller then starts the command itself.
// Invariants: nothing the spawner (or anyone writing to its pipes) sends can throw out of here; a
// command whose spawner died is still waited for (until its pid is gone; the exit status is then
// unknown: code and signal null); a spawn the spawner does not answer in time rejects, and a command
// it leaves a zombie for seconds gets it killed, so a stuck (or stopped) spawner never holds execs.

import { type ChildProcess, spawn as nodeSpawn } from 'node:child_process';
import { closeSync, constants, openSync, readFileSync, readSync } from 'node:fs';
import { Socket } from 'node:net';
import { SandboxError } from '../../host/errors.ts';
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
  /** The interpreter. Default `python3` (on PATH). */
  python?: string;
  /** Longest wait for the spawner's answer to a spawn (or for it to start) before it is killed as stuck. Default 10000 ms. */
  answerTimeoutMs?: number;
  /** Unexpected deaths tolerated (each followed by a restart at the next spawn) before giving up. Default 10. */
  maxRestarts?: number;
  log?: (line: string) => void;
}

type Pending = {
  req: SpawnRequest;
  resolve: (s: Spawned) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
};
type Running = { pid: number; resolve: (e: Exit) => void };
type Message = Record<string, unknown>;

const MAX_LINE = 64 * 1024;
const WATCHDOG_MS = 1000;
const WATCHDOG_CHECKS = 3;
const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
const isFd = (v: unknown): v is number =>
  Number.isInteger(v) && (v as number) >= -1 && (v as number) < 1 << 20;
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
  const { python = 'python3', answerTimeoutMs = 10_000, maxRestarts = 10 } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`sandboxd: spawner: ${line}\n`));
  let state: 'idle' | 'starting' | 'ready' | 'off' = 'idle';
  let child: ChildProcess | undefined;
  let spawnerPid = 0;
  let deaths = 0;
  let nextId = 1;
  let startTimer: NodeJS.Timeout | undefined;
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
  const openPipe = (fd: number, flags: number): number =>
    openSync(`/proc/${spawnerPid}/fd/${fd}`, flags | constants.O_NONBLOCK);
  const giveUp = (why: string): void => {
    if (state !== 'off') log(`${why}; exec falls back to child_process.spawn`);
    state = 'off';
    child?.kill('SIGKILL');
  };

  /** The spawner is up: check that its pipes can be opened through /proc before using it. */
  const onReady = (m: Message): void => {
    const probe = m.probe as unknown[];
    if (!isPid(m.pid) || !Array.isArray(probe) || !isFd(probe[0]) || !isFd(probe[1])) {
      giveUp('bad hello');
      return;
    }
    spawnerPid = m.pid;
    try {
      const r = openPipe(probe[0], constants.O_RDONLY);
      const buf = Buffer.alloc(2);
      const n = readSync(r, buf, 0, 2, null);
      closeSync(r);
      closeSync(openPipe(probe[1], constants.O_WRONLY));
      if (n !== 2 || buf.toString() !== 'ok') throw new Error('probe pipe did not hold "ok"');
    } catch (e) {
      giveUp(`cannot open its pipes through /proc (${(e as Error).message})`);
      return;
    }
    write({ t: 'release', id: 0 });
    clearTimeout(startTimer);
    state = 'ready';
  };

  const onSpawned = (m: Message, p: Pending): void => {
    const fds = m.fds as unknown[];
    if (!isPid(m.pid) || !Array.isArray(fds) || !fds.every(isFd) || fds.length !== 3) {
      p.reject(new SandboxError('TOOL_FAILED', 'The spawner sent a malformed answer.'));
      giveUp('malformed answer');
      return;
    }
    const pid = m.pid;
    const [inW, outR, errR] = fds as [number, number, number];
    const opened: number[] = [];
    try {
      opened.push(openPipe(outR, constants.O_RDONLY));
      opened.push(openPipe(errR, constants.O_RDONLY));
      if (p.req.stdin && inW >= 0) opened.push(openPipe(inW, constants.O_WRONLY));
    } catch (e) {
      for (const fd of opened) closeSync(fd);
      write({ t: 'release', id: m.id });
      killGroup(pid);
      p.reject(
        new SandboxError('TOOL_FAILED', `Could not open the command's pipes: ${(e as Error).message}`),
      );
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
        new SandboxError('TOOL_FAILED', 'The command could not be started (the spawner stopped); try again.'),
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
      proc = nodeSpawn(python, ['-I', '-S', '-c', 'exec(open(3).read())'], {
        argv0: 'sandboxd-spawner',
        cwd: '/',
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
    proc.on('exit', (code, sig) => onDeath(proc, sig ?? `exit code ${code}`));
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
          pending.delete(id);
          reject(new SandboxError('TOOL_FAILED', 'The spawner did not answer; try again.'));
          log(`no answer in ${answerTimeoutMs} ms; killing it`);
          child?.kill('SIGKILL');
        }, answerTimeoutMs);
        pending.set(id, { req, resolve, reject, timer });
        write({
          t: 'spawn',
          id,
          argv: [req.file, ...req.args].map(b64),
          cwd: b64(req.cwd),
          env: Object.entries(req.env).flatMap(([k, v]) => (v === undefined ? [] : [[b64(k), b64(v)]])),
          stdin: req.stdin,
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
    },
  };
};

export type Spawner = ReturnType<typeof createSpawner>;
