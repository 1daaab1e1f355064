// How exec starts a command: through the spawner (spawner.ts) when it is ready, else with
// child_process.spawn (the first exec, which also starts the spawner; a request the spawner never
// took because it died; or when python3 is missing or broken). Either way the caller gets the same
// Proc: a process in a session and process group of its own (pid = pgid) with all three of the
// agent's ids, or a server's (identity.ts), its three pipes, and promises for its exit and for its
// output closing.

import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { asAgent } from './identity.ts';
import {
  createSpawner,
  type Exit,
  type Spawner,
  type SpawnerOptions,
  SpawnNotTaken,
  type SpawnRequest,
} from './spawner.ts';

export interface Proc {
  pid: number;
  /** Present when the request asked for stdin. */
  stdin: Writable | undefined;
  stdout: Readable;
  stderr: Readable;
  /** Resolves when the process has exited. */
  exited: Promise<Exit>;
  /** Resolves when stdout and stderr have both closed. */
  closed: Promise<void>;
  /** Which way it was started (tests, logs). */
  via: 'spawner' | 'node';
}

const closedBoth = (a: Readable, b: Readable): Promise<void> =>
  Promise.all([a, b].map((s) => new Promise<void>((resolve) => s.once('close', () => resolve())))).then(
    () => {},
  );

/** child_process.spawn, resolved once the process is running (rejects with its spawn error). */
export const spawnWithNode = (req: SpawnRequest): Promise<Proc> =>
  new Promise((resolve, reject) => {
    const { file, args } = asAgent(req.file, req.args, req.as);
    const child = spawn(file, args, {
      cwd: req.cwd,
      env: req.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    for (const s of [child.stdin, child.stdout, child.stderr]) s?.on('error', () => {});
    if (!req.stdin) child.stdin?.end();
    const closed = new Promise<void>((r) => child.once('close', () => r()));
    const exited = new Promise<Exit>((r) => child.once('exit', (code, signal) => r({ code, signal })));
    child.once('error', reject);
    child.once('spawn', () => {
      child.off('error', reject);
      child.on('error', () => {});
      resolve({
        pid: child.pid as number,
        stdin: req.stdin ? (child.stdin ?? undefined) : undefined,
        stdout: child.stdout as Readable,
        stderr: child.stderr as Readable,
        exited,
        closed,
        via: 'node',
      });
    });
  });

/** Start through `spawner` when it is ready, else through child_process.spawn. */
export const launch = async (req: SpawnRequest, spawner: Spawner): Promise<Proc> => {
  const viaSpawner = spawner.spawn(req);
  if (!viaSpawner) return spawnWithNode(req);
  let s: Awaited<typeof viaSpawner>;
  try {
    s = await viaSpawner;
  } catch (e) {
    // Issued while the spawner was dying or restarting: it never started, so start it ourselves.
    if (e instanceof SpawnNotTaken) return spawnWithNode(req);
    throw e;
  }
  for (const stream of [s.stdin, s.stdout, s.stderr]) stream?.on('error', () => {});
  return {
    pid: s.pid,
    stdin: s.stdin,
    stdout: s.stdout,
    stderr: s.stderr,
    exited: s.exit,
    closed: closedBoth(s.stdout, s.stderr),
    via: 'spawner',
  };
};

let shared: Spawner | undefined;
let sharedOptions: SpawnerOptions = {};
/** Options of the process-wide spawner; call before its first use (main.ts). */
export const configureSharedSpawner = (options: SpawnerOptions): void => {
  sharedOptions = options;
};
/** The process-wide spawner, created (not started) at first use. */
export const sharedSpawner = (): Spawner => {
  shared ??= createSpawner(sharedOptions);
  return shared;
};
