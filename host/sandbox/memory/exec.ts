// Exec for the memory provider. There is no shell here on purpose: a fake shell would let tests pass
// against behaviour no real sandbox has. Without an injected `run` collaborator every exec rejects
// with SANDBOX_UNAVAILABLE; with one, this module adds what every provider owes its callers:
// streaming callbacks, the output cap, timeouts and cancellation.

import { SandboxError } from '../../errors.ts';
import type { ExecOptions, ExecResult, SandboxFs } from '../types.ts';

/** What a scripted command sees. Write output with `stdout`/`stderr`; resolve with the exit code. */
export interface MemoryProcess {
  command: string;
  /** Confined absolute working directory. */
  cwd: string;
  env: Record<string, string>;
  stdin: string;
  /** Aborted on timeout, on the caller's signal, and on job kill. */
  signal: AbortSignal;
  fs: SandboxFs;
  stdout(chunk: string | Uint8Array): void;
  stderr(chunk: string | Uint8Array): void;
}

/** A scripted process: resolves with its exit code (undefined = 0). */
export type MemoryRun = (process: MemoryProcess) => Promise<number | undefined> | number | undefined;

export const execUnsupported = (): SandboxError =>
  new SandboxError(
    'SANDBOX_UNAVAILABLE',
    'exec is not supported by the memory provider; construct it with a `run` collaborator, or use the docker provider.',
  );

export const createMemoryExec = (options: {
  run?: MemoryRun;
  fs: SandboxFs;
  maxOutputBytes: number;
  now?: () => number;
}) => {
  const { run, fs, maxOutputBytes } = options;
  const now = options.now ?? Date.now;
  return async (command: string, opts: ExecOptions = {}): Promise<ExecResult> => {
    if (!run) throw execUnsupported();
    const cwd = fs.resolve(opts.cwd ?? '.');
    const started = now();
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(
      () => {
        timedOut = true;
        abort.abort();
      },
      Math.min(opts.timeoutMs ?? 120_000, 2 ** 31 - 1),
    );
    const onAbort = (): void => abort.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) abort.abort();
    const out = { stdout: [] as Buffer[], stderr: [] as Buffer[], size: 0, truncated: false };
    const writer = (which: 'stdout' | 'stderr') => (chunk: string | Uint8Array) => {
      if (abort.signal.aborted) return;
      const buf = Buffer.from(chunk);
      (which === 'stdout' ? opts.onStdout : opts.onStderr)?.(buf);
      const room = maxOutputBytes - out.size;
      if (buf.length > room) out.truncated = true;
      const part = buf.subarray(0, Math.max(0, room));
      out[which].push(part);
      out.size += part.length;
    };
    const proc: MemoryProcess = {
      command,
      cwd,
      env: { ...opts.env },
      stdin: opts.stdin ?? '',
      signal: abort.signal,
      fs,
      stdout: writer('stdout'),
      stderr: writer('stderr'),
    };
    const aborted = new Promise<null>((resolve) =>
      abort.signal.addEventListener('abort', () => resolve(null), { once: true }),
    );
    try {
      const code = abort.signal.aborted
        ? null
        : await Promise.race([Promise.resolve(run(proc)).then((c) => c ?? 0), aborted]);
      return {
        exitCode: abort.signal.aborted ? null : code,
        stdout: Buffer.concat(out.stdout).toString('utf8'),
        stderr: Buffer.concat(out.stderr).toString('utf8'),
        timedOut,
        truncated: out.truncated,
        durationMs: now() - started,
      };
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
  };
};
