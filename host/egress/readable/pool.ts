// Where HTML becomes markdown: one worker thread (./worker.ts), started at the first job, so that
// parsing a hostile page never holds the control plane's event loop. Bounds: jobs run one at a time
// in arrival order, at most `maxQueued` wait (more are refused at once), a job that runs past
// `timeoutMs` terminates the worker (the next job starts a fresh one), and the worker's heap is
// limited (`maxHeapMb`), so a page that explodes in memory ends only its own job.
// Invariants: every job settles exactly once; a cancelled job that is running lets its worker finish
// it (or time out), its answer dropped.
import { Worker } from 'node:worker_threads';
import { SandboxError } from '../../errors.ts';
import type { Readable } from './convert.ts';

export interface ReadablePoolOptions {
  /** Longest conversion of one page. Default 10000 ms. */
  timeoutMs?: number;
  /** Jobs waiting behind the running one; more are refused. Default 16. */
  maxQueued?: number;
  /** Old-generation heap of the worker, in MB. Default 256. */
  maxHeapMb?: number;
}

export interface ReadablePool {
  convert(html: string, url: string, signal?: AbortSignal): Promise<Readable>;
  close(): Promise<void>;
}

interface Job {
  id: number;
  html: string;
  url: string;
  resolve: (value: Readable) => void;
  reject: (error: unknown) => void;
  signal: AbortSignal | undefined;
}

const WORKER = new URL('./worker.ts', import.meta.url);

export function createReadablePool(options: ReadablePoolOptions = {}): ReadablePool {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxQueued = options.maxQueued ?? 16;
  const queue: Job[] = [];
  let worker: Worker | undefined;
  let running: { job: Job; timer: NodeJS.Timeout } | undefined;
  let nextId = 1;
  let closed = false;

  function failed(message: string, cause?: unknown): SandboxError {
    return new SandboxError('TOOL_FAILED', message, cause === undefined ? {} : { cause });
  }

  function spawn(): Worker {
    const w = new Worker(WORKER, { resourceLimits: { maxOldGenerationSizeMb: options.maxHeapMb ?? 256 } });
    w.unref();
    w.on('message', (answer: { id: number; ok: boolean; value?: Readable; error?: string }) => {
      if (running === undefined || running.job.id !== answer.id) return;
      const { job, timer } = running;
      clearTimeout(timer);
      running = undefined;
      if (answer.ok) job.resolve(answer.value as Readable);
      else job.reject(failed(`The page could not be converted: ${answer.error ?? 'unknown error'}`));
      pump();
    });
    w.on('error', (error) => lost(w, failed(`The page could not be converted: ${error.message}`, error)));
    w.on('exit', () => lost(w, failed('The page could not be converted: the converter stopped.')));
    return w;
  }

  /** The worker died (out of memory, a crash, terminated): its job fails, the next gets a new one. */
  function lost(w: Worker, error: SandboxError): void {
    if (worker !== w) return;
    worker = undefined;
    if (running !== undefined) {
      clearTimeout(running.timer);
      running.job.reject(error);
      running = undefined;
    }
    pump();
  }

  function pump(): void {
    if (running !== undefined || closed) return;
    const job = queue.shift();
    if (job === undefined) return;
    if (job.signal?.aborted) {
      job.reject(job.signal.reason);
      pump();
      return;
    }
    worker ??= spawn();
    const w = worker;
    const timer = setTimeout(() => {
      lost(w, failed(`Converting the page took longer than ${timeoutMs} ms; it was stopped.`));
      void w.terminate();
    }, timeoutMs);
    running = { job, timer };
    w.postMessage({ id: job.id, html: job.html, url: job.url });
  }

  return {
    convert(html, url, signal) {
      if (closed) return Promise.reject(failed('The converter is shut down.'));
      if (queue.length >= maxQueued)
        return Promise.reject(
          new SandboxError(
            'RATE_LIMITED',
            `${queue.length} pages are waiting to be converted; try again shortly.`,
          ),
        );
      return new Promise<Readable>((resolve, reject) => {
        queue.push({ id: nextId++, html, url, resolve, reject, signal });
        pump();
      });
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(failed('The converter is shut down.'));
      const w = worker;
      worker = undefined;
      if (running !== undefined) {
        clearTimeout(running.timer);
        running.job.reject(failed('The converter is shut down.'));
        running = undefined;
      }
      await w?.terminate();
    },
  };
}
