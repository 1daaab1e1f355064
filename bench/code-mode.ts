// Cost of code mode, `node --no-node-snapshot bench/code-mode.ts`.
// 1. A whole run_code call of `return 1` through the registry (pipeline, durable in-memory log,
//    compile, worker round trip, a prepared isolate), arriving the way an idle service sees them (one
//    every IDLE_GAP_MS: the worker has prepared the next isolates meanwhile) and back to back (each
//    run uses up a fresh isolate, so this measures how fast workers make isolates, not latency);
//    against evaluating `1` with isolated-vm in this process (a reused isolate with a new context,
//    and a fresh isolate per eval).
// 2. Per-call cost of `await tools.noop({})` in a 200-call loop inside a program (each call crosses
//    isolate → worker → host → pipeline and back), against calling noop directly through
//    scope.execute; plus the same 200 calls under Promise.all (concurrency-safe, overlapping).
// 3. The floor under a brokered call: a message round trip between two Node processes over the
//    same kind of IPC channel, nothing else (two process wake-ups).
// 4. The targets, one line each with figure, baseline, ratio and verdict: a trivial run_code under
//    2 ms median end to end, and a brokered call under 60 µs (20 calls per program) and 30 µs (200)
//    more than the same call made directly.
// 5. run_code's pipeline alone, around an isolate host that answers every run at once, back to back
//    and one every IDLE_GAP_MS: the difference is what cold caches cost a run arriving at an idle
//    service (the same code, its data and V8's, refetched after the process slept).
// The machine is shared: repeat runs and read ranges, one run proves little.
import ivm from 'isolated-vm';
import { createIsolateHost, type IsolateHost } from '../host/isolates/index.ts';
import { codeModeScope } from './code-mode-scope.ts';
import { ipcRoundTrip } from './ipc-floor.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const TRIVIAL_TARGET_MS = 2;
/** Brokered call over a direct one, by calls per program. */
const CALL_OVERHEAD_TARGET_MS: Record<number, number> = { 20: 0.06, 200: 0.03 };
/** Between two trivial runs in the idle-service measurement. */
const IDLE_GAP_MS = 10;
const LOOP_RUNS = Number(process.env.BENCH_LOOP_RUNS ?? 20);
const CALLS = 200;

const quantile = (xs: number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
};
const stats = (xs: number[]) => ({ median: quantile(xs, 0.5), p99: quantile(xs, 0.99) });
const fmt = (ms: number): string => (ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`);
const verdict = (met: boolean): string => (met ? 'MET' : 'NOT MET');
/** n samples of fn's duration; a fn that returns a number measured itself (ms). */
const time = async (n: number, fn: () => Promise<unknown> | unknown): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const own = await fn();
    out.push(typeof own === 'number' ? own : performance.now() - t);
  }
  return out;
};

const isolates = createIsolateHost({ workers: 2, prewarm: 2 });
/** An isolate host that answers every run at once: what the pipeline around it costs alone. */
const answering: IsolateHost = {
  run: async () => ({
    ok: true,
    value: 1,
    logs: [],
    stats: { calls: 0, maxInFlight: 0, wallMs: 0, inline: true },
  }),
  limits: isolates.limits,
  workerPids: () => [],
  readyWorkers: () => 0,
  close: async () => undefined,
};
const { runCode, direct } = codeModeScope(isolates);
/** A run arriving at an idle service: after a pause, timed from its arrival. */
const idleRun = async (code: string): Promise<number> => {
  await new Promise((resolve) => setTimeout(resolve, IDLE_GAP_MS));
  const started = performance.now();
  await runCode(code);
  return performance.now() - started;
};
try {
  // Warm up: worker start, esbuild service, JIT on both sides.
  await time(20, () => runCode('return 1'));
  await time(200, direct);

  const idle = stats(await time(RUNS, () => idleRun('return 1')));
  const pipeline = stats(
    await time(RUNS, async () => {
      await runCode('return 1');
    }),
  );
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  await time(50, async () => (await isolate.createContext()).eval('1'));
  const bareContext = stats(
    await time(RUNS, async () => {
      const context = await isolate.createContext();
      await context.eval('1');
      context.release();
    }),
  );
  isolate.dispose();
  const bareIsolate = stats(
    await time(Math.min(RUNS, 100), async () => {
      const fresh = new ivm.Isolate({ memoryLimit: 64 });
      await (await fresh.createContext()).eval('1');
      fresh.dispose();
    }),
  );
  // The pipeline alone, back to back and arriving like the idle runs: the gap is cold caches.
  const pipelineOnly = codeModeScope(answering).runCode;
  await time(RUNS * 5, () => pipelineOnly('return 1'));
  const pipelineWarm = stats(
    await time(RUNS * 5, async () => {
      await pipelineOnly('return 1');
    }),
  );
  const pipelineIdle = stats(
    await time(RUNS, async () => {
      await new Promise((resolve) => setTimeout(resolve, IDLE_GAP_MS));
      const started = performance.now();
      await pipelineOnly('return 1');
      return performance.now() - started;
    }),
  );
  const directCalls = stats(await time(RUNS * 5, direct));
  const ipc = await ipcRoundTrip(2000);

  console.log(
    `run_code "return 1", full pipeline, one every ${IDLE_GAP_MS} ms (${RUNS} runs): median ${fmt(idle.median)}, p99 ${fmt(idle.p99)}`,
  );
  console.log(
    `run_code "return 1", back to back (${RUNS} runs; bound by making a fresh isolate per run): median ${fmt(pipeline.median)}, p99 ${fmt(pipeline.p99)}`,
  );
  console.log(
    `isolated-vm in-process, new context + eval:  median ${fmt(bareContext.median)}, p99 ${fmt(bareContext.p99)}  (ratio ${(idle.median / bareContext.median).toFixed(1)}x)`,
  );
  console.log(
    `isolated-vm in-process, new isolate + eval:  median ${fmt(bareIsolate.median)}, p99 ${fmt(bareIsolate.p99)}  (ratio ${(idle.median / bareIsolate.median).toFixed(1)}x)`,
  );
  console.log(
    `run_code's pipeline alone (an isolate host that answers at once): back to back median ${fmt(pipelineWarm.median)}, one every ${IDLE_GAP_MS} ms median ${fmt(pipelineIdle.median)} (p99 ${fmt(pipelineIdle.p99)})`,
  );
  console.log(
    `direct noop through scope.execute (${RUNS * 5} calls): median ${fmt(directCalls.median)}, p99 ${fmt(directCalls.p99)}`,
  );
  console.log(`IPC round trip to a child process (the floor under a brokered call): median ${fmt(ipc)}`);

  const all = `await Promise.all(Array.from({ length: ${CALLS} }, () => tools.noop({})));\nreturn 1;`;
  const allRuns = await time(LOOP_RUNS, () => idleRun(all));
  const perAllCall = (quantile(allRuns, 0.5) - idle.median) / CALLS;
  console.log(
    `program with ${CALLS} tools.noop calls under Promise.all: median ${fmt(quantile(allRuns, 0.5))}, per call ${fmt(perAllCall)}`,
  );
  // Every run is a fresh isolate: short programs pay more per call (cold code on both sides).
  const targets: string[] = [];
  for (const n of [20, CALLS, 1000]) {
    const runs = await time(Math.max(LOOP_RUNS, Math.round(4000 / n)), () =>
      idleRun(`for (let i = 0; i < ${n}; i++) await tools.noop({});\nreturn 1;`),
    );
    const per = (quantile(runs, 0.5) - idle.median) / n;
    const over = per - directCalls.median;
    console.log(
      `program with ${n} sequential tools.noop calls: median ${fmt(quantile(runs, 0.5))}, per call ${fmt(per)} (${fmt(over)} more than direct, ${(over / ipc).toFixed(2)}x the IPC round trip)`,
    );
    const target = CALL_OVERHEAD_TARGET_MS[n];
    if (target !== undefined)
      targets.push(
        `TARGET brokered call at ${n} calls per program: ${fmt(per)} vs ${fmt(directCalls.median)} direct = ${fmt(over)} more (ratio ${(per / directCalls.median).toFixed(1)}x) vs target < ${fmt(target)} more; floor: one IPC round trip ${fmt(ipc)} → ${verdict(over < target)}`,
      );
  }
  console.log(
    `TARGET trivial run_code: median ${fmt(idle.median)} (p99 ${fmt(idle.p99)}) vs target ${fmt(TRIVIAL_TARGET_MS)}; baseline bare new isolate + eval ${fmt(bareIsolate.median)} (ratio ${(idle.median / bareIsolate.median).toFixed(2)}x) → ${verdict(idle.median <= TRIVIAL_TARGET_MS)}`,
  );
  for (const line of targets) console.log(line);
} finally {
  await isolates.close();
}
