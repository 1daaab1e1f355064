// What sandboxd's side of the spawner holds (spawner.ts wires it), in one object its parts
// (spawner-process.ts, spawner-answers.ts, spawner-watch.ts) take as their first argument: the
// phase, the python process, the requests waiting for an answer and the commands running; and the
// few things every part does (write a message, give up, check a FIFO name).
// Invariants: `state` is off for good once given up or stopped; `child` is the live spawner
// process or undefined; every pending request has a timer and is answered, rejected or timed out
// once; a FIFO name is trusted only when it is one random name right inside our box.
import type { ChildProcess } from 'node:child_process';
import { constants, openSync } from 'node:fs';
import { posix } from 'node:path';
import type { Exit, Spawned, SpawnRequest } from './spawner-types.ts';

export type Pending = {
  req: SpawnRequest;
  /** The spawner said it read the request (and may have started the command). */
  got: boolean;
  resolve: (s: Spawned) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
};
export type Running = { pid: number; resolve: (e: Exit) => void };
export type Message = Record<string, unknown>;

export interface SpawnerState {
  python: string;
  /** The python program it runs (spawner-script.ts). */
  script: string;
  answerTimeoutMs: number;
  maxRestarts: number;
  log: (line: string) => void;
  state: 'idle' | 'starting' | 'ready' | 'off';
  child: ChildProcess | undefined;
  spawnerPid: number;
  /** Unexpected deaths so far. */
  deaths: number;
  nextId: number;
  startTimer: NodeJS.Timeout | undefined;
  /** Where the spawner makes its FIFOs. */
  box: string | undefined;
  /** The box is ours to remove (we made it). */
  ownBox: boolean;
  pending: Map<number, Pending>;
  running: Map<number, Running>;
  watchdog: NodeJS.Timeout | undefined;
  /** pid -> checks it has been seen a zombie at. */
  unreaped: Map<number, number>;
}

export function isPid(v: unknown): v is number {
  return Number.isInteger(v) && (v as number) > 1;
}

export function write(s: SpawnerState, m: Message): void {
  s.child?.stdin?.write(`${JSON.stringify(m)}\n`);
}

/** A FIFO name the spawner reported: one random name right inside our box, nothing else. */
export function isFifo(s: SpawnerState, v: unknown): v is string {
  return typeof v === 'string' && posix.dirname(v) === s.box && /^[0-9a-f]{32}$/.test(posix.basename(v));
}

export function openFifo(name: string, flags: number): number {
  return openSync(name, flags | constants.O_NONBLOCK | constants.O_NOFOLLOW);
}

export function giveUp(s: SpawnerState, why: string): void {
  if (s.state !== 'off') s.log(`${why}; exec falls back to child_process.spawn`);
  s.state = 'off';
  s.child?.kill('SIGKILL');
}
