// In-process background jobs for the memory provider, run through its injected exec collaborator.
// Invariants: a job's output only grows; status moves running → exited | killed once. Jobs live in
// this process only (ProviderFlags.durableJobs = false).

import { SandboxError } from '../../errors.ts';
import type { ExecOptions, ExecResult, JobInfo, SandboxJobs } from '../types.ts';

export type ExecFn = (command: string, options?: ExecOptions) => Promise<ExecResult>;

interface Job {
  info: JobInfo;
  output: Buffer[];
  size: number;
  abort: AbortController;
  done: Promise<void>;
}

export interface MemoryJobsOptions {
  exec: ExecFn;
  /** Absolute default working directory. */
  root: string;
  resolve: (path: string) => string;
  /** Output kept per job. Default 1 MiB; older bytes are not dropped, new ones are (truncated). */
  maxOutputBytes?: number;
  now?: () => number;
}

export const createMemoryJobs = (options: MemoryJobsOptions): SandboxJobs => {
  const { exec, resolve } = options;
  const now = options.now ?? Date.now;
  const max = options.maxOutputBytes ?? 1024 * 1024;
  const jobs = new Map<string, Job>();
  let seq = 0;

  const find = (id: string): Job => {
    const j = jobs.get(id);
    if (!j)
      throw new SandboxError(
        'JOB_NOT_FOUND',
        `No job with id ${JSON.stringify(id)}; list jobs to see their ids.`,
        { data: { id } },
      );
    return j;
  };
  const append = (j: Job, chunk: Buffer): void => {
    if (j.size >= max) return;
    const part = chunk.subarray(0, max - j.size);
    j.output.push(part);
    j.size += part.length;
  };

  return {
    async start(command, opts = {}) {
      const cwd = resolve(opts.cwd ?? '.');
      const id = `job-${++seq}`;
      const info: JobInfo = {
        id,
        command,
        cwd,
        status: 'running',
        exitCode: null,
        startedAt: now(),
        endedAt: null,
      };
      const abort = new AbortController();
      const job: Job = { info, output: [], size: 0, abort, done: Promise.resolve() };
      job.done = exec(command, {
        cwd,
        ...(opts.env ? { env: opts.env } : {}),
        signal: abort.signal,
        timeoutMs: Number.MAX_SAFE_INTEGER,
        onStdout: (c) => append(job, c),
        onStderr: (c) => append(job, c),
      }).then(
        (r) => {
          if (info.status !== 'running') return;
          info.status = r.exitCode === null ? 'killed' : 'exited';
          info.exitCode = r.exitCode;
          info.endedAt = now();
        },
        (e) => {
          if (info.status !== 'running') return;
          append(job, Buffer.from(`\n${(e as Error)?.message ?? e}\n`));
          info.status = abort.signal.aborted ? 'killed' : 'exited';
          info.exitCode = abort.signal.aborted ? null : 1;
          info.endedAt = now();
        },
      );
      jobs.set(id, job);
      return { ...info };
    },
    async list() {
      return [...jobs.values()].map((j) => ({ ...j.info }));
    },
    async output(id, opts = {}) {
      const j = find(id);
      if (opts.wait && j.info.status === 'running') {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          j.done,
          new Promise<void>((r) => {
            timer = setTimeout(r, opts.timeoutMs ?? 30_000);
            opts.signal?.addEventListener('abort', () => r(), { once: true });
          }),
        ]);
        clearTimeout(timer);
      }
      const all = Buffer.concat(j.output, j.size);
      let offset = Math.min(Math.max(0, opts.offset ?? 0), all.length);
      if (opts.tail !== undefined) {
        offset = Math.max(0, all.length - opts.tail);
        // Start at a character, not inside one.
        for (let i = 0; i < 3 && offset < all.length && ((all[offset] as number) & 0xc0) === 0x80; i++)
          offset++;
      }
      return {
        ...j.info,
        output: all.subarray(offset).toString('utf8'),
        offset,
        nextOffset: all.length,
        truncated: j.size >= max,
      };
    },
    async kill(id) {
      const j = find(id);
      if (j.info.status === 'running') {
        j.info.status = 'killed';
        j.info.exitCode = null;
        j.info.endedAt = now();
        j.abort.abort();
      }
      return { ...j.info };
    },
  };
};
