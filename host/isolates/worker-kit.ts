// What every isolate worker process (run_code's, host/isolates/worker.ts; creator plugins',
// host/plugins/worker/main.ts) does besides its own protocol, in one place: it dies at once when
// its parent is gone (nobody would kill it after a hang, and a disposed isolate can hang a graceful
// exit), it survives the stray rejections of isolates disposed mid-operation, and every poll it
// meters the CPU its isolates really used (cpu.ts: which ends those past their budgets) and then
// governs their memory (memory.ts).
import { createCpuMeter, type Metered } from './cpu.ts';
import { createMemoryWatch, type Governed } from './memory.ts';

export interface WorkerUpkeep {
  /** The resident memory the worker governs its isolates to, in MB. */
  budgetMb: number;
  /** How often the isolates are metered and governed, in ms. */
  pollMs: number;
  /** The isolates alive now (called every poll). */
  live(): Iterable<Metered & Governed>;
  /** Quiet, it holds BLOAT_MB more than at start (memory.ts): it should be replaced. */
  onBloated?: () => void;
}

export function startWorkerUpkeep(options: WorkerUpkeep): void {
  process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
  process.on('unhandledRejection', (reason) =>
    process.stderr.write(`unhandled rejection: ${String(reason).slice(0, 300)}\n`),
  );
  const meter = createCpuMeter();
  const watch = createMemoryWatch(options.budgetMb, undefined, options.onBloated);
  setInterval(() => {
    meter(options.live());
    watch(options.live());
  }, options.pollMs).unref();
}
