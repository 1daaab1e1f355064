// sandboxd's side of the spawner (the python3 loop in spawner-script.ts): starts it once, asks it to
// start commands, opens the commands' FIFOs by the names it reports (Node 18 cannot receive
// descriptors over a unix socket, and the spawner's /proc/<pid>/fd is closed to us once both run
// apart from the agent, identity.ts) and hands them out as sockets, with the exit status it reports.
// States: idle (not started, or died or hung and may be restarted) → starting → ready; off when
// python3 is missing, the FIFO probe fails, it sent garbage, it died too often, or after stop().
// `spawn()` returns undefined unless ready: the caller then starts the command itself.
// This module wires the parts, each over one SpawnerState (spawner-state.ts): spawner-process.ts
// starts the python process and handles its death; spawner-answers.ts reads what it says and
// opens the FIFOs; spawner-watch.ts kills a spawner that leaves its commands zombies;
// spawner-types.ts is what callers see (re-exported here).
// Invariants: nothing the spawner sends can throw out of here; a command whose spawner died is
// still waited for (until its pid is gone; the exit status is then unknown: code and signal null);
// a request the spawner never took (no `got`: it died first, or was already dead but not yet
// reaped) rejects with SpawnNotTaken, so the caller starts it another way instead of failing; a
// spawn the spawner does not answer in time rejects, and a command it leaves a zombie for seconds
// gets it killed, so a stuck (or stopped) spawner never holds execs.

import { existsSync, rmSync } from 'node:fs';
import { WireError } from '../../sandbox-wire/errors.ts';
import { start } from './spawner-process.ts';
import { SPAWNER_SCRIPT } from './spawner-script.ts';
import { type SpawnerState, write } from './spawner-state.ts';
import { type Spawned, SpawnNotTaken, type SpawnRequest } from './spawner-types.ts';

export { type Exit, type Spawned, SpawnNotTaken, type SpawnRequest } from './spawner-types.ts';

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
  /** The spawner's program; default SPAWNER_SCRIPT (a bench compares another version with it). */
  script?: string;
}

/** Not a version manager's shim on PATH: a shim is often a bash script that sources BASH_ENV. */
const SYSTEM_PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

function b64(s: string): string {
  return Buffer.from(s, 'utf8').toString('base64');
}

export function createSpawner(options: SpawnerOptions = {}) {
  const { python = SYSTEM_PYTHON, answerTimeoutMs = 10_000, maxRestarts = 10 } = options;
  const s: SpawnerState = {
    python,
    script: options.script ?? SPAWNER_SCRIPT,
    answerTimeoutMs,
    maxRestarts,
    log: options.log ?? ((line: string) => process.stderr.write(`sandboxd: spawner: ${line}\n`)),
    state: 'idle',
    child: undefined,
    spawnerPid: 0,
    deaths: 0,
    nextId: 1,
    startTimer: undefined,
    box: options.box,
    ownBox: false,
    pending: new Map(),
    running: new Map(),
    watchdog: undefined,
    unreaped: new Map(),
  };
  return {
    /** Start the spawner now rather than at the first spawn. */
    start(): void {
      if (s.state === 'idle') start(s);
    },
    /** Start a command through the spawner; undefined when it is not ready (start it yourself). */
    spawn: (req: SpawnRequest): Promise<Spawned> | undefined => spawnThrough(s, req),
    get state() {
      return s.state;
    },
    /** The spawner's pid (0 before it is ready); for tests. */
    get pid() {
      return s.spawnerPid;
    },
    /** Stop the spawner for good (it kills the commands it started). */
    stop(): void {
      s.state = 'off';
      s.child?.stdin?.end();
      if (s.ownBox && s.box) {
        const dir = s.box;
        s.child?.once('close', () => rmSync(dir, { recursive: true, force: true }));
        if (!s.child) rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

export type Spawner = ReturnType<typeof createSpawner>;

function spawnThrough(s: SpawnerState, req: SpawnRequest): Promise<Spawned> | undefined {
  if (s.state === 'idle') {
    // After the caller's own spawn: forking sandboxd twice in one turn would delay its command.
    s.state = 'starting';
    setImmediate(start, s);
  }
  if (s.state !== 'ready') return undefined;
  const id = s.nextId++;
  const { pending, answerTimeoutMs } = s;
  return new Promise<Spawned>((resolve, reject) => {
    const timer = setTimeout(() => {
      const got = pending.get(id)?.got;
      pending.delete(id);
      reject(
        got
          ? new WireError('TOOL_FAILED', 'The spawner did not answer; try again.')
          : new SpawnNotTaken('the spawner did not take the request'),
      );
      s.log(`no answer in ${answerTimeoutMs} ms; killing it`);
      s.child?.kill('SIGKILL');
    }, answerTimeoutMs);
    pending.set(id, { req, got: false, resolve, reject, timer });
    write(s, {
      t: 'spawn',
      id,
      argv: [req.file, ...req.args].map(b64),
      ...(req.fasterFile ? { exe: b64(req.fasterFile) } : {}),
      cwd: b64(req.cwd),
      env: Object.entries(req.env).flatMap(([k, v]) => (v === undefined ? [] : [[b64(k), b64(v)]])),
      stdin: req.stdin,
      server: req.as === 'server',
    });
  });
}
