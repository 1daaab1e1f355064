// The public vocabulary of the isolate host: what a run asks for, which limits bound it and what
// comes back. Everything here is data; the host (host.ts) and the worker (worker.ts) implement it.
// Invariant: an outcome is always one of these two shapes; untrusted work never throws through run().
import type { JsonValue } from '../json.ts';

export type { JsonValue };

/** Per-run bounds. Every field has a default (DEFAULT_LIMITS); a run may only narrow or widen them explicitly. */
export interface RunLimits {
  /**
   * Wall-clock deadline from dispatch to the worker, time spent awaiting tool calls included: it
   * must be long enough for the slowest tool the program may wait on. Default 30 000.
   */
  wallMs: number;
  /**
   * CPU time of the program's own work: CPU its worker process really spent on it (cpu.ts), never
   * time it waited for a core; waiting on a tool call costs none of it, so a program that waits for
   * minutes on a tool still has its whole budget. An inline entry is cut off after
   * INLINE_WAIT_FACTOR × the budget left in wall-clock time (protocol.ts). Default 10 000.
   */
  cpuMs: number;
  /** Isolate heap limit (isolated-vm `memoryLimit`, a guideline V8 may overshoot 2-3x). Default 64. */
  memoryMb: number;
  /** Captured console output in bytes (UTF-16 code units); past it the run ends as output_limit. Default 64 KiB. */
  maxOutputBytes: number;
  /** JSON size of one call's arguments, checked inside the isolate before copying. Default 1 MiB. */
  maxCallBytes: number;
  /** JSON size of one call's result, checked on the host before copying in. Default 4 MiB. */
  maxCallResultBytes: number;
  /** JSON size of the program's return value, checked inside the isolate. Default 1 MiB. */
  maxResultBytes: number;
  /** Tool calls per run; one more ends the run as `limit`. Default 1 000. */
  maxCalls: number;
  /**
   * Calls of one run handed to onCall and not settled yet (pending); further calls wait, in the
   * order the program made them, until one settles. Which pending calls overlap is onCall's
   * decision (the tool pipeline's gate). Default 16.
   */
  maxInFlight: number;
  /** Size of the source code. Default 256 KiB. */
  maxCodeBytes: number;
}

export const DEFAULT_LIMITS: Readonly<RunLimits> = Object.freeze({
  wallMs: 30_000,
  cpuMs: 10_000,
  memoryMb: 64,
  maxOutputBytes: 64 * 1024,
  maxCallBytes: 1024 * 1024,
  maxCallResultBytes: 4 * 1024 * 1024,
  maxResultBytes: 1024 * 1024,
  maxCalls: 1_000,
  maxInFlight: 16,
  maxCodeBytes: 256 * 1024,
});

/**
 * Brokers one `tools.<name>(args)` call back to the host pipeline. Throw to fail the call. Calls
 * arrive in the order the program made them, up to RunLimits.maxInFlight at once; the handler
 * decides which of them may overlap.
 */
export type CallHandler = (name: string, args: JsonValue, signal: AbortSignal) => Promise<JsonValue>;

export interface RunRequest {
  /** The body of an async function. `tools`, `console` and the `globals` are in scope. */
  code: string;
  /**
   * 'ts' (default): TypeScript, types stripped by esbuild in the host process.
   * 'js': JavaScript; still passed through esbuild (loader js) so errors map to the same lines.
   */
  language?: 'ts' | 'js';
  /** Extra read-only globals, copied in as JSON (e.g. `args` for workflow scripts). */
  globals?: Record<string, JsonValue>;
  /** Names the program may call as `tools.<name>(args)`. Nothing else is reachable. */
  bindings: readonly string[];
  onCall: CallHandler;
  limits?: Partial<RunLimits>;
  signal?: AbortSignal;
  /**
   * May this run have a worker to itself (IsolateHostOptions.inline)? Default true. Runs that
   * mostly wait (a workflow awaiting subagents for minutes) say false: they gain nothing from it
   * and would keep a worker from everybody else all that time.
   */
  inline?: boolean;
  /**
   * Whom the run is for (the service passes the tenant id). Runs of one owner hold at most
   * IsolateHostOptions.ownerShare of the runs the workers open to everybody take, so one owner's
   * programs, however long they compute, never keep another owner's run waiting in the queue.
   * Runs without an owner are not counted.
   */
  owner?: string;
}

/** Why a run failed; each member is what the model sees in `code run failed (<kind>)`. */
export type FailureKind =
  | 'compile' // the source does not parse (line:column are the model's own)
  | 'runtime' // the program threw or rejected
  | 'timeout' // wall-clock or CPU deadline
  | 'memory' // isolate heap limit
  | 'output_limit' // captured console output over maxOutputBytes
  | 'aborted' // the caller's signal fired
  | 'crash' // the worker process died or stopped answering
  | 'limit' // a size or count cap (call args, return value, calls, code size)
  | 'stalled'; // it awaits a promise nothing can settle (no tool call pending): it would never finish

export type RunOutcome =
  | { ok: true; value: JsonValue | undefined; logs: string[]; stats: RunStats }
  | { ok: false; kind: FailureKind; message: string; logs: string[]; stats: RunStats };

export interface RunStats {
  /** Tool calls the program made. */
  calls: number;
  /** Highest number of calls pending in onCall at the same time. */
  maxInFlight: number;
  /** Host-observed time from run() to outcome. */
  wallMs: number;
  /** The run had a worker to itself and entered its isolate on the worker's thread (see `inline`). */
  inline: boolean;
}

export interface IsolateHostOptions {
  /** Worker processes. Default 2. */
  workers?: number;
  /** Default limits for every run. */
  limits?: Partial<RunLimits>;
  /** Idle isolates each worker keeps ready (created with the default memory limit). Default 2. */
  prewarm?: number;
  /**
   * Runs one worker hosts at once; more wait in the host's queue. Default: as many as fit in the
   * worker's memory budget with each holding its whole heap limit (memory.ts `runsPerWorker`:
   * 9 with the default 1024 MB worker and 64 MB isolates on 2 cores), at most 64. A worker also takes a
   * run only while the memory reserved by its runs leaves room for it.
   */
  maxRunsPerWorker?: number;
  /**
   * Let a run that gets a worker to itself enter its isolate on that worker's thread (isolated-vm
   * applySync): each tool call then costs two thread hand-offs fewer. Such a worker takes no other
   * run while it has this one, and a run is only given one while another worker stays free for
   * everybody else, so a program that computes for its whole CPU budget delays nobody. Default true.
   */
  inline?: boolean;
  /**
   * The share of the runs that the workers open to everybody (not dedicated to an inline run)
   * hold that one owner's runs may take (RunRequest.owner): at least one run, at most this share
   * rounded up. The rest stays free for other owners, so a run of another owner is dispatched at
   * once instead of waiting behind an owner's queue for as long as its programs' CPU budgets.
   * Default 0.5.
   */
  ownerShare?: number;
  /** `--max-old-space-size` of a worker (its own heap, not the isolates'). Default 256. */
  workerHeapMb?: number;
  /**
   * Resident set size past which the supervisor kills a worker (Linux /proc). The worker itself
   * ends the runs that hold more than their limits allow before it gets there (memory.ts).
   * Default 1024.
   */
  workerRssMb?: number;
  /** Time a worker gets to exit after being told to, or after a deadline, before SIGKILL. Default 1000. */
  killGraceMs?: number;
  /** Diagnostics (worker exits, restarts, stderr tails); never shown to a model. */
  onEvent?: (event: IsolateHostEvent) => void;
}

export type IsolateHostEvent =
  | { type: 'worker_started'; worker: number; pid: number }
  | {
      type: 'worker_exited';
      worker: number;
      pid: number;
      code: number | null;
      signal: string | null;
      stderr: string;
    }
  | { type: 'worker_killed'; worker: number; pid: number; reason: string };

export interface IsolateHost {
  run(request: RunRequest): Promise<RunOutcome>;
  /** The limits a run gets where its request says nothing (DEFAULT_LIMITS and the host's options). */
  readonly limits: Readonly<RunLimits>;
  /** Live worker pids (for diagnostics and tests). */
  workerPids(): number[];
  /** Workers that take runs now (started and ready; for diagnostics and tests). */
  readyWorkers(): number;
  /** Ends every worker (kill after grace); pending runs fail as aborted. */
  close(): Promise<void>;
}
