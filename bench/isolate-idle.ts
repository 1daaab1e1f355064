// What the isolate workers cost while nothing runs, `node --no-node-snapshot bench/isolate-idle.ts`
// (issue 33): an isolate host of 2 workers (2 prepared isolates each) started, left idle, and the
// CPU of each worker process (all its threads, schedstat) read over BENCH_ROUNDS (3) windows of
// BENCH_WINDOW_MS (2000). An idle worker wakes for its poll (worker-kit.ts) and its inline
// watchdog's tick only; this is what they burn of a machine that serves nothing.
import { readdirSync, readFileSync } from 'node:fs';
import { createIsolateHost } from '../host/isolates/index.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 2000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** ms on a CPU of every thread of `pid` (schedstat, ns). */
const cpuMsOf = (pid: number): number =>
  readdirSync(`/proc/${pid}/task`).reduce(
    (sum, tid) =>
      sum + Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6,
    0,
  );

const host = createIsolateHost({ workers: 2, prewarm: 2 });
try {
  await host.run({ code: 'return 1', bindings: [], onCall: async () => null });
  await sleep(1000); // the workers' start-up and the run's refill are over
  const pids = host.workerPids();
  for (let round = 0; round < ROUNDS; round++) {
    const before = pids.map(cpuMsOf);
    await sleep(WINDOW_MS);
    const perSecond = pids.map((pid, i) => ((cpuMsOf(pid) - (before[i] as number)) * 1000) / WINDOW_MS);
    console.log(
      `idle isolate workers, CPU ms per second each: ${perSecond.map((ms) => ms.toFixed(2)).join(', ')}`,
    );
  }
} finally {
  await host.close();
}
