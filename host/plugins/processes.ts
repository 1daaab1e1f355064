// The plugin worker processes, seen from the API process: forks them (--no-node-snapshot, a heap
// cap, an empty environment), restarts them when they die (with backoff when they die young),
// kills them when their resident memory passes a cap, and places plugins on them by the memory
// their isolates may hold. Plugin isolates never live in the API process: isolated-vm has known
// ways to abort a whole process (ARCHITECTURE.md, "Code mode and isolates").
// Invariants: a worker is `ready` only between its `ready` message and its exit; `reservedMb`
// is the sum of what the plugins placed on it may hold (owned by the caller through place() and
// release()); at most one live child per index.
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SandboxError } from '../errors.ts';
import { type ForkedWorker, forkWorker, nextRestart, residentBytesOf } from '../isolates/fork.ts';
import { waitingReserveMb, workerCapacityMb } from '../isolates/memory.ts';
import type { HostToPluginWorker, PluginWorkerToHost } from './protocol.ts';
import { isMessage, unbatch } from './protocol.ts';

const WORKER_PATH = fileURLToPath(new URL('./worker/main.ts', import.meta.url));

export interface PluginWorker {
  readonly index: number;
  readonly pid: number;
  ready: boolean;
  /** Memory the plugins placed here may hold (isolate limit + 4 MB each), in MB. */
  reservedMb: number;
}

export interface PluginProcessesOptions {
  /** Worker processes. Default 1. */
  workers?: number;
  /** `--max-old-space-size` of a worker (its own heap, not the isolates'). Default 256. */
  heapMb?: number;
  /** Resident set past which a worker is killed; its plugins are governed to stay below. Default 1024. */
  rssMb?: number;
  /** Time a worker gets to exit when told to, before SIGKILL. Default 1000. */
  killGraceMs?: number;
  /** How long place() waits for a worker to be ready. Default 10 000. */
  readyTimeoutMs?: number;
  /** Diagnostics (exits, kills, stderr tails); never shown to a model. */
  onEvent?: (event: { type: 'exited' | 'killed'; worker: number; pid: number; detail: string }) => void;
}

export interface PluginProcesses {
  /** A ready worker with room for a plugin of `memoryMb`, reserved for it; ISOLATE_UNAVAILABLE when none has. */
  place(memoryMb: number): Promise<PluginWorker>;
  /** Gives back what place() reserved. */
  release(worker: PluginWorker, memoryMb: number): void;
  /** Queue for the frame that leaves at the end of this tick; false when the worker is gone. */
  post(worker: PluginWorker, message: HostToPluginWorker): boolean;
  /** Messages of every worker, and its exit (after which it never speaks again). */
  listen(handlers: {
    message(worker: PluginWorker, message: PluginWorkerToHost): void;
    exit(worker: PluginWorker): void;
  }): void;
  pids(): number[];
  close(): Promise<void>;
}

interface Entry {
  worker: PluginWorker;
  child: ChildProcess;
  startedAt: number;
  forked: ForkedWorker<HostToPluginWorker>;
}

export const createPluginProcesses = (options: PluginProcessesOptions = {}): PluginProcesses => {
  const count = options.workers ?? 1;
  const rssMb = options.rssMb ?? 1024;
  const heapMb = options.heapMb ?? 256;
  const killGraceMs = options.killGraceMs ?? 1000;
  const readyTimeoutMs = options.readyTimeoutMs ?? 10_000;
  const entries: Array<Entry | undefined> = [];
  const failures: number[] = [];
  const waiters = new Set<() => void>();
  let handlers: Parameters<PluginProcesses['listen']>[0] = {
    message: () => undefined,
    exit: () => undefined,
  };
  let closing = false;

  function start(index: number): void {
    const args = JSON.stringify({ budgetMb: Math.floor(rssMb * 0.85) });
    const forked = forkWorker<HostToPluginWorker>(WORKER_PATH, args, heapMb);
    const { child } = forked;
    const worker: PluginWorker = { index, pid: child.pid ?? -1, ready: false, reservedMb: 0 };
    const entry: Entry = { worker, child, startedAt: Date.now(), forked };
    entries[index] = entry;
    child.on('message', (raw: unknown) => {
      if (!isMessage(raw)) return;
      for (const message of unbatch(raw) as PluginWorkerToHost[]) {
        if (message.t === 'ready') {
          if (worker.ready || entries[index] !== entry) continue;
          worker.ready = true;
          for (const wake of [...waiters]) wake();
        } else if (worker.ready) handlers.message(worker, message);
      }
    });
    child.on('exit', (code, signal) => {
      const wasReady = worker.ready;
      worker.ready = false;
      if (entries[index] === entry) entries[index] = undefined;
      const detail = `${signal ? `signal ${signal}` : `exit code ${code}`}; stderr: ${forked.stderr().slice(-500)}`;
      options.onEvent?.({ type: 'exited', worker: index, pid: worker.pid, detail });
      if (wasReady) handlers.exit(worker);
      if (closing) return;
      const restart = nextRestart(failures[index] ?? 0, Date.now() - entry.startedAt);
      failures[index] = restart.failures;
      setTimeout(() => !closing && start(index), restart.delayMs).unref();
    });
  }

  const capacityMb = (memoryMb: number) => workerCapacityMb(rssMb, memoryMb);
  function pick(memoryMb: number): PluginWorker | undefined {
    let best: PluginWorker | undefined;
    for (const entry of entries) {
      const worker = entry?.worker;
      if (!worker?.ready || worker.reservedMb + waitingReserveMb(memoryMb) > capacityMb(memoryMb)) continue;
      if (best === undefined || worker.reservedMb < best.reservedMb) best = worker;
    }
    return best;
  }

  // Isolate memory limits are guidelines (some builtins ignore them): the process cap is real.
  const rssWatch = setInterval(() => {
    for (const entry of entries) {
      if (!entry) continue;
      // Unknown (no /proc, or the process just exited) counts as within the cap.
      if ((residentBytesOf(entry.worker.pid) ?? 0) <= rssMb * 1024 * 1024) continue;
      options.onEvent?.({
        type: 'killed',
        worker: entry.worker.index,
        pid: entry.worker.pid,
        detail: `resident memory over ${rssMb} MB`,
      });
      entry.child.kill('SIGKILL');
    }
  }, 100);
  rssWatch.unref();

  for (let i = 0; i < count; i++) start(i);

  return {
    async place(memoryMb) {
      const deadline = Date.now() + readyTimeoutMs;
      for (;;) {
        if (closing) throw new SandboxError('SHUTTING_DOWN', 'The plugin runtime is shutting down.');
        const worker = pick(memoryMb);
        if (worker !== undefined) {
          worker.reservedMb += waitingReserveMb(memoryMb);
          return worker;
        }
        const anyReady = entries.some((entry) => entry?.worker.ready);
        const left = deadline - Date.now();
        if (anyReady || left <= 0) {
          throw new SandboxError(
            'ISOLATE_UNAVAILABLE',
            anyReady
              ? 'The plugin workers have no room for another plugin now; stop a plugin and try again.'
              : 'No plugin worker is ready; try again shortly.',
          );
        }
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiters.delete(wake);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(wake, left);
          waiters.add(wake);
        });
      }
    },
    release(worker, memoryMb) {
      worker.reservedMb = Math.max(0, worker.reservedMb - waitingReserveMb(memoryMb));
    },
    post(worker, message) {
      const entry = entries[worker.index];
      if (!entry || entry.worker !== worker || !worker.ready) return false;
      entry.forked.outbox.post(message);
      return true;
    },
    listen(next) {
      handlers = next;
    },
    pids: () => entries.flatMap((entry) => (entry?.worker.ready ? [entry.worker.pid] : [])),
    async close() {
      closing = true;
      clearInterval(rssWatch);
      for (const wake of [...waiters]) wake();
      const live = entries.filter((entry): entry is Entry => entry !== undefined);
      for (const entry of live) {
        entry.forked.outbox.flush();
        try {
          entry.child.send({ t: 'shutdown' } satisfies HostToPluginWorker);
        } catch {
          entry.child.kill('SIGKILL');
        }
      }
      await Promise.all(
        live.map(async (entry) => {
          const timer = setTimeout(() => entry.child.kill('SIGKILL'), killGraceMs);
          await entry.forked.exited;
          clearTimeout(timer);
        }),
      );
    },
  };
};
