// What every isolate worker process (run_code's, host/isolates/worker.ts; creator plugins',
// host/plugins/worker/main.ts) does besides its own protocol, in one place: it dies at once when
// its parent is gone (nobody would kill it after a hang, and a disposed isolate can hang a graceful
// exit), it survives the stray rejections of isolates disposed mid-operation, and every poll it
// meters the CPU its isolates really used (cpu.ts: which ends those past their budgets) and then
// governs their memory (memory.ts). Invariant: while an isolate is live, polls are at most pollMs
// apart (a worker that polls slower while idle is woken before it enters one).
import { createCpuMeter, type Metered } from './cpu.ts';
import { createMemoryWatch, type Governed } from './memory.ts';

export interface WorkerUpkeep {
  /** The resident memory the worker governs its isolates to, in MB. */
  budgetMb: number;
  /** How often the isolates are metered and governed, in ms. */
  pollMs: number;
  /**
   * How often while none is live, in ms (default pollMs): an idle worker only checks its own size
   * then, and each poll is a wake-up of the process. `wake()` goes back to pollMs.
   */
  idlePollMs?: number;
  /** The isolates alive now (called every poll). */
  live(): Iterable<Metered & Governed>;
  /** Quiet, it holds BLOAT_MB more than at start (memory.ts): it should be replaced. */
  onBloated?: () => void;
}

export interface Upkeep {
  /**
   * An isolate is about to be live (call it before it is entered): polls every pollMs again from
   * now on, the CPU idle threads used meanwhile (isolates being made) charged to nobody.
   */
  wake(): void;
}

export function startWorkerUpkeep(options: WorkerUpkeep): Upkeep {
  process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
  process.on('unhandledRejection', (reason) =>
    process.stderr.write(`unhandled rejection: ${String(reason).slice(0, 300)}\n`),
  );
  const meter = createCpuMeter();
  const watch = createMemoryWatch(options.budgetMb, undefined, options.onBloated);
  return pollSchedule(options.pollMs, options.idlePollMs ?? options.pollMs, options.live, {
    poll: (live) => {
      meter(live());
      watch(live());
    },
    // What idle threads used since the last poll (isolates being made) is nobody's.
    woken: () => meter([]),
  });
}

/**
 * Calls `poll` every pollMs while `live` yields anything after a poll, else every idlePollMs until
 * wake(), which re-arms pollMs from now (after `woken`). The timer never keeps the process alive.
 */
export function pollSchedule<T>(
  pollMs: number,
  idlePollMs: number,
  live: () => Iterable<T>,
  hooks: { poll(live: () => Iterable<T>): void; woken(): void },
): Upkeep {
  let idle = false;
  let timer: NodeJS.Timeout | undefined;
  const schedule = (ms: number): void => {
    clearTimeout(timer);
    timer = setTimeout(poll, ms);
    timer.unref();
  };
  const poll = (): void => {
    hooks.poll(live);
    // None live after this poll (it may have ended some): the next can wait, until wake().
    idle = live()[Symbol.iterator]().next().done === true;
    schedule(idle ? idlePollMs : pollMs);
  };
  schedule(pollMs);
  return {
    wake() {
      if (!idle) return;
      idle = false;
      hooks.woken();
      schedule(pollMs);
    },
  };
}
