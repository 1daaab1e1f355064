// Keeps N isolate worker processes alive: forks them (--no-node-snapshot, a heap cap, an empty
// environment), restarts them with exponential backoff when they crash in a loop, kills them when
// their resident memory passes a cap, and kills them after a grace period when they do not exit.
// Invariants: a handle is `ready` only between its `ready` message and its exit; `runs` holds the
// ids of the runs dispatched to it and is emptied by the owner (host.ts) on exit; at most one live
// child per index.

import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type ForkedWorker, forkWorker, nextRestart, residentBytesOf } from './fork.ts';
import type { HostToWorker, WorkerToHost } from './protocol.ts';
import { isMessage, unbatch } from './protocol.ts';
import type { IsolateHostEvent } from './types.ts';

const WORKER_PATH = fileURLToPath(new URL('./worker.ts', import.meta.url));

export interface WorkerHandle {
  index: number;
  pid: number;
  ready: boolean;
  runs: Set<number>;
  /** Untouched isolates the worker last reported, minus runs sent since (routing hint). */
  slots: number;
  /** The worker is (or is about to be) creating isolates, which blocks its loop a few ms at a time. */
  warming: boolean;
  /** When the host learned that the current warming began (performance.now()). */
  warmingSince: number;
  /** Memory the runs dispatched to it may hold while they wait (memory.ts), in MB. */
  reservedMb: number;
  /** The run this worker is dedicated to (it may enter its isolate inline), if any. */
  inlineRun: number | undefined;
  /** When the worker's event loop last said it was alive, or the inline run was dispatched. */
  aliveAt: number;
  /**
   * A run of it ran out of memory: it takes no more runs and is shut down (and replaced) once its
   * runs are over, since what the isolate grew may not be given back and would be the next run's.
   */
  retiring: boolean;
}

export interface SupervisorOptions {
  count: number;
  heapMb: number;
  rssMb: number;
  killGraceMs: number;
  /** Passed to worker.ts as its argv JSON. */
  workerArgs: { prewarm: number; memoryMb: number; budgetMb: number };
  onMessage(handle: WorkerHandle, message: WorkerToHost): void;
  onReady(handle: WorkerHandle): void;
  onExit(handle: WorkerHandle, description: string): void;
  onEvent?: (event: IsolateHostEvent) => void;
}

export interface Supervisor {
  handles(): readonly WorkerHandle[];
  /** Send now (after anything posted earlier, in order). */
  send(handle: WorkerHandle, message: HostToWorker): boolean;
  /** Queue for the frame that leaves at the end of this tick. */
  post(handle: WorkerHandle, message: HostToWorker): void;
  /** SIGKILL now; the exit is reported through onExit like any other. */
  kill(handle: WorkerHandle, reason: string): void;
  close(): Promise<void>;
}

interface Entry {
  handle: WorkerHandle;
  child: ChildProcess;
  startedAt: number;
  forked: ForkedWorker<HostToWorker>;
}

export const createSupervisor = (options: SupervisorOptions): Supervisor => {
  const entries: Array<Entry | undefined> = [];
  const failures: number[] = [];
  let closing = false;

  const start = (index: number): void => {
    const forked = forkWorker<HostToWorker>(WORKER_PATH, JSON.stringify(options.workerArgs), options.heapMb);
    const { child } = forked;
    const handle: WorkerHandle = {
      index,
      pid: child.pid ?? -1,
      ready: false,
      runs: new Set(),
      slots: 0,
      warming: true,
      warmingSince: performance.now(),
      reservedMb: 0,
      inlineRun: undefined,
      aliveAt: performance.now(),
      retiring: false,
    };
    const entry: Entry = { handle, child, startedAt: Date.now(), forked };
    entries[index] = entry;
    let announced = false; // `ready` counts once: a killed worker's late frames never revive it
    child.on('message', (raw: unknown) => {
      if (!isMessage(raw)) return;
      for (const item of unbatch(raw)) {
        const message = item as WorkerToHost;
        if (message.t === 'ready') {
          if (announced) continue;
          announced = true;
          handle.ready = true;
          options.onEvent?.({ type: 'worker_started', worker: index, pid: handle.pid });
          options.onReady(handle);
        } else if (handle.ready) options.onMessage(handle, message);
      }
    });
    child.on('exit', (code, signal) => {
      handle.ready = false;
      if (entries[index] === entry) entries[index] = undefined;
      options.onEvent?.({
        type: 'worker_exited',
        worker: index,
        pid: handle.pid,
        code,
        signal,
        stderr: forked.stderr(),
      });
      options.onExit(handle, signal ? `signal ${signal}` : `exit code ${code}`);
      if (closing) return;
      const restart = nextRestart(failures[index] ?? 0, Date.now() - entry.startedAt);
      failures[index] = restart.failures;
      setTimeout(() => !closing && start(index), restart.delayMs).unref();
    });
  };

  const kill = (handle: WorkerHandle, reason: string): void => {
    const entry = entries[handle.index];
    if (!entry || entry.handle !== handle) return;
    options.onEvent?.({ type: 'worker_killed', worker: handle.index, pid: handle.pid, reason });
    handle.ready = false;
    entry.child.kill('SIGKILL');
  };

  // Isolate memory limits are guidelines (and some builtins ignore them): the process cap is real.
  const rssWatch = setInterval(() => {
    for (const entry of entries) {
      if (!entry) continue;
      // Unknown (no /proc, or the process just exited) counts as within the cap.
      if ((residentBytesOf(entry.handle.pid) ?? 0) > options.rssMb * 1024 * 1024)
        kill(entry.handle, `resident memory over ${options.rssMb} MB`);
    }
  }, 100);
  rssWatch.unref();

  for (let i = 0; i < options.count; i++) start(i);

  return {
    handles: () => entries.flatMap((entry) => (entry ? [entry.handle] : [])),
    send: (handle, message) => {
      const entry = entries[handle.index];
      if (!entry || entry.handle !== handle || !entry.child.connected) return false;
      return entry.forked.outbox.send(message);
    },
    post: (handle, message) => {
      const entry = entries[handle.index];
      if (entry && entry.handle === handle) entry.forked.outbox.post(message);
    },
    kill,
    close: async () => {
      closing = true;
      clearInterval(rssWatch);
      const live = entries.filter((entry): entry is Entry => entry !== undefined);
      for (const entry of live) {
        try {
          entry.child.send({ t: 'shutdown' } satisfies HostToWorker);
        } catch {
          entry.child.kill('SIGKILL');
        }
      }
      await Promise.all(
        live.map(async (entry) => {
          const timer = setTimeout(() => entry.child.kill('SIGKILL'), options.killGraceMs);
          await entry.forked.exited;
          clearTimeout(timer);
        }),
      );
    },
  };
};
