// What the spawner's callers see (spawner.ts re-exports it): a request, the command it started
// (its pipes as sockets and its exit), and the error that says the spawner never took a request.
import type { Socket } from 'node:net';
import type { RunAs } from './identity.ts';

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
  /**
   * Another binary of the same program that starts faster, run in `file`'s stead (argv[0] stays
   * `file`) by the spawner only: child_process's path goes through setpriv, which cannot keep argv[0].
   */
  fasterFile?: string;
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

/** The spawner never took this request: nothing was started, so the caller may start it itself. */
export class SpawnNotTaken extends Error {}
