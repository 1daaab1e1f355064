// The IPC vocabulary between the isolate host (API process) and a worker process. Messages carry
// strings and numbers only: values cross as JSON text so that both sides can check sizes before
// parsing, and nothing but data ever reaches the worker or comes back from it. Messages produced in
// the same tick travel as one `batch` frame (one write, one wake-up of the other process); a batch
// holds plain messages only, never another batch.
import type { FailureKind } from './types.ts';

/** The limits a worker enforces itself (the host keeps the call caps it brokers). */
export interface WorkerLimits {
  wallMs: number;
  cpuMs: number;
  memoryMb: number;
  maxOutputBytes: number;
  maxCallBytes: number;
  maxResultBytes: number;
  maxCalls: number;
}

export type HostToWorker =
  /** Start a program: `src` is esbuild output defining `async function __main(tools, console)`. */
  | {
      t: 'run';
      id: number;
      src: string;
      bindings: string[];
      globalsJson: string;
      limits: WorkerLimits;
      /** The worker is this run's alone: it may enter the isolate on its own thread (worker-run.ts). */
      inline: boolean;
    }
  /** A call settled: `envelope` is `{"ok":true,"value":…}` or `{"ok":false,"error":{"code","message"}}`. */
  | { t: 'result'; id: number; callId: number; envelope: string }
  /**
   * The run's worker is no longer dedicated to it (it waits long on its tools): enter its isolate
   * on the thread pool from now on; the worker answers `released` from its event loop.
   */
  | { t: 'release'; id: number }
  /** Stop a run now (caller aborted); the worker answers with a `done` of kind aborted. */
  | { t: 'cancel'; id: number }
  /** Finish nothing further; exit. */
  | { t: 'shutdown' }
  | Batch<'result'>;

/** Several messages of one tick in one frame (the receiver handles them in order). */
export interface Batch<T extends string> {
  t: 'batch';
  messages: Array<{ t: T; [key: string]: unknown }>;
}

export interface WorkerFailure {
  ok: false;
  kind: FailureKind;
  message: string;
  /** Raw isolate stack of a runtime error (mapped and filtered by the host, never shown as-is). */
  stack?: string;
  logs: string[];
}

export type WorkerOutcome = { ok: true; valueJson: string | undefined; logs: string[] } | WorkerFailure;

export type WorkerToHost =
  | { t: 'ready'; pid: number }
  | { t: 'call'; id: number; callId: number; name: string; argsJson: string }
  | { t: 'done'; id: number; outcome: WorkerOutcome }
  /** Answer to `release`: no inline entry of the run holds the worker's thread, and none will. */
  | { t: 'released'; id: number }
  /**
   * The worker's pool of idle isolates: `ready` slots no program has touched, `warming` true while it
   * is still creating more (its event loop is then busy for a few ms at a time). Routing hint only.
   */
  | { t: 'pool'; ready: number; warming: boolean }
  /**
   * Sent from the worker's event loop every ALIVE_MS while it has an inline run: proof that its
   * thread is not stuck in an isolate entry. Tool calls do not count (a program stuck where no
   * timeout reaches it can still make them).
   */
  | { t: 'alive' }
  /** Quiet, the worker holds much more memory than at start (memory.ts BLOAT_MB): retire it. */
  | { t: 'bloated' }
  | Batch<'call' | 'done' | 'released' | 'pool' | 'alive'>;

/** How often a worker with an inline run says it is alive. */
export const ALIVE_MS = 250;

/**
 * How many times its CPU budget left an inline entry may hold its worker's thread, in wall-clock
 * time (worker-run.ts). isolated-vm's timeout is the only interrupt of an entry on that thread: it
 * counts wall-clock time, waiting for a core included, and it ends the entry for good. So it is set
 * this much past the budget: a program starved of cores (up to this factor) is not cut off, and a
 * busy loop on an idle machine still ends, having used at most this factor times its budget.
 */
export const INLINE_WAIT_FACTOR = 4;

/** The longest an inline entry of a run with these limits may hold its worker's thread (ms). */
export const inlineEntryMaxMs = (limits: { cpuMs: number; wallMs: number }): number =>
  Math.min(limits.wallMs, INLINE_WAIT_FACTOR * limits.cpuMs);

/** Longest error message or code that crosses in either direction. */
export const MAX_ERROR_CHARS = 2_000;
/** Longest raw stack a worker forwards. */
export const MAX_STACK_CHARS = 4_000;

export const clip = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} more characters]`;

/** Shape check for anything read off the IPC channel: the other side may be a crashed or hostile process. */
export const isMessage = (value: unknown): value is { t: string; [key: string]: unknown } =>
  typeof value === 'object' && value !== null && typeof (value as { t?: unknown }).t === 'string';

/** The messages of a frame: itself, or a batch's members that pass the shape check. */
export const unbatch = (value: {
  t: string;
  [key: string]: unknown;
}): Array<{ t: string; [key: string]: unknown }> => {
  if (value.t !== 'batch') return [value];
  const messages = value.messages;
  return Array.isArray(messages) ? messages.filter((m) => isMessage(m) && m.t !== 'batch') : [];
};
