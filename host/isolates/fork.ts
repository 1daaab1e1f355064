// Forks one isolate worker process the way every one is forked (run_code's workers and the plugin
// workers alike): --no-node-snapshot (isolated-vm needs it), a heap cap, an empty environment (no
// secret of the control plane reaches a process that runs strangers' code), stderr kept as a tail
// for diagnostics, and an outbox whose bursts leave as one frame per tick.
// Also the restart backoff and the resident-set reading their supervisors share.
// Invariant: `exited` resolves once the process is gone, after the outbox was cleared.
import type { ChildProcess, Serializable } from 'node:child_process';
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createOutbox, type Outbox } from './outbox.ts';

const STDERR_TAIL = 4096;

/**
 * V8 flags of a worker process, which hold for its isolates too. Sparkplug (the baseline compiler)
 * compiles in batches once ~4 KB of bytecode has run hot (V8's default threshold, 4096): in a fresh
 * isolate that came at a program's 13th tool call and stalled the worker's thread 50-700 µs
 * (bench/call-hops.ts, measured in-process per call). At 64 KB a short program never pays it; a
 * long one is still compiled, a little later (CPU-bound programs timed the same within noise).
 */
export const ISOLATE_V8_FLAGS = ['--baseline-batch-compilation-threshold=65536'];

export interface ForkedWorker<M> {
  child: ChildProcess;
  outbox: Outbox<M>;
  /** The last 4 KiB its stderr said. */
  stderr(): string;
  exited: Promise<void>;
}

export const forkWorker = <M extends object>(
  path: string,
  argsJson: string,
  heapMb: number,
): ForkedWorker<M> => {
  const child = fork(path, [argsJson], {
    execArgv: ['--no-node-snapshot', `--max-old-space-size=${heapMb}`, ...ISOLATE_V8_FLAGS],
    env: {},
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'json',
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_TAIL);
  });
  const outbox = createOutbox<M>((frame) => {
    if (!child.connected) return false;
    try {
      return child.send(frame as Serializable);
    } catch {
      return false;
    }
  }, process.nextTick);
  child.on('error', () => undefined); // spawn and IPC errors end in 'exit'
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      outbox.clear();
      resolve();
    }),
  );
  return { child, outbox, stderr: () => stderr, exited };
};

const STABLE_AFTER_MS = 10_000;
const MAX_BACKOFF_MS = 10_000;

/**
 * When to start a worker again after it exited: at once after a worker that lived a while, with
 * exponential backoff when workers keep dying young (a crash loop). `failures` is the count so far.
 */
export const nextRestart = (failures: number, livedMs: number): { failures: number; delayMs: number } => {
  const next = livedMs > STABLE_AFTER_MS ? 0 : failures + 1;
  return { failures: next, delayMs: next <= 1 ? 0 : Math.min(100 * 2 ** (next - 2), MAX_BACKOFF_MS) };
};

/** A process's resident set in bytes (Linux /proc); undefined elsewhere or once it is gone. */
export const residentBytesOf = (pid: number): number | undefined => {
  try {
    return Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * 4096;
  } catch {
    return undefined;
  }
};
