// One plugin worker process seen from the API process: forked as every isolate worker is
// (host/isolates/fork.ts: --no-node-snapshot, a heap cap, an empty environment), ready once it says
// so, its frames unbatched, and an orderly stop (`shutdown`, then SIGKILL after a grace period).
// It belongs to one tenant (processes.ts decides which and when one starts or ends); it is never
// started again here. Invariants: `ready` only between its `ready` message and its exit; messages
// reach `onMessage` only while it is ready; `onExit` is called once, when the process is gone.
import { fileURLToPath } from 'node:url';
import { forkWorker, residentBytesOf } from '../isolates/fork.ts';
import { BUDGET_SHARE } from '../isolates/memory.ts';
import type { HostToPluginWorker, PluginWorkerToHost } from './protocol.ts';
import { isMessage, unbatch } from './protocol.ts';

const WORKER_PATH = fileURLToPath(new URL('./worker/main.ts', import.meta.url));

export interface PluginWorker {
  /** Unique for the life of the service: a tenant's next worker gets a new one. */
  readonly id: number;
  /** The tenant whose plugins, and only whose, it holds. */
  readonly tenantId: string;
  readonly pid: number;
  ready: boolean;
  /** Memory the plugins placed here may hold (isolate limit + 4 MB each), in MB. */
  reservedMb: number;
}

export interface WorkerProcessOptions {
  id: number;
  tenantId: string;
  /** `--max-old-space-size` of the process (its own heap, not the isolates'). */
  heapMb: number;
  /** Resident set past which processes.ts kills it; its isolates are governed to stay below. */
  rssMb: number;
  /** Its messages, while it is ready. */
  onMessage(message: PluginWorkerToHost): void;
  /** It is gone; `detail` says how (signal or code, the tail of its stderr). */
  onExit(detail: string, wasReady: boolean): void;
}

export interface WorkerProcess {
  readonly worker: PluginWorker;
  /** performance.now() when it was forked. */
  readonly startedAt: number;
  /** True once it is ready; false when it exits before. */
  readonly ready: Promise<boolean>;
  /** Queues a message for the frame that leaves at the end of this tick; false when it is not ready. */
  post(message: HostToPluginWorker): boolean;
  /** Its resident set in bytes; undefined when unknown (no /proc, or it just exited). */
  residentBytes(): number | undefined;
  kill(): void;
  /** Asks it to exit, and kills it after `graceMs`; resolves once it is gone. */
  stop(graceMs: number): Promise<void>;
}

export const startWorkerProcess = (options: WorkerProcessOptions): WorkerProcess => {
  const args = JSON.stringify({ budgetMb: Math.floor(options.rssMb * BUDGET_SHARE) });
  const forked = forkWorker<HostToPluginWorker>(WORKER_PATH, args, options.heapMb);
  const { child } = forked;
  const worker: PluginWorker = {
    id: options.id,
    tenantId: options.tenantId,
    pid: child.pid ?? -1,
    ready: false,
    reservedMb: 0,
  };
  let becameReady: (ready: boolean) => void = () => {};
  const ready = new Promise<boolean>((resolve) => {
    becameReady = resolve;
  });
  child.on('message', (raw: unknown) => {
    if (!isMessage(raw)) return;
    for (const message of unbatch(raw) as PluginWorkerToHost[]) {
      if (message.t === 'ready') {
        if (worker.ready || child.exitCode !== null) continue;
        worker.ready = true;
        becameReady(true);
      } else if (worker.ready) options.onMessage(message);
    }
  });
  child.on('exit', (code, signal) => {
    const wasReady = worker.ready;
    worker.ready = false;
    becameReady(false);
    const detail = `${signal ? `signal ${signal}` : `exit code ${code}`}; stderr: ${forked.stderr().slice(-500)}`;
    options.onExit(detail, wasReady);
  });

  return {
    worker,
    startedAt: performance.now(),
    ready,
    post(message) {
      if (!worker.ready) return false;
      forked.outbox.post(message);
      return true;
    },
    residentBytes: () => residentBytesOf(worker.pid),
    kill: () => child.kill('SIGKILL'),
    async stop(graceMs) {
      // A graceful exit can hang inside a disposed isolate: the grace period ends it.
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      forked.outbox.flush();
      try {
        child.send({ t: 'shutdown' } satisfies HostToPluginWorker);
      } catch {
        child.kill('SIGKILL');
      }
      await forked.exited;
      clearTimeout(timer);
    },
  };
};
