// Cost of code mode, `node --no-node-snapshot bench/code-mode.ts`.
// 1. A whole run_code call of `return 1` through the registry (pipeline, durable in-memory log,
//    compile, worker round trip, fresh isolate) against evaluating `1` with isolated-vm in this
//    process (a reused isolate with a new context, and a fresh isolate per eval).
// 2. Per-call cost of `await tools.noop({})` in a 200-call loop inside a program (each call crosses
//    isolate → worker → host → pipeline and back), against calling noop directly through
//    scope.execute; plus the same 200 calls under Promise.all (concurrency-safe, overlapping).
// 3. The targets, one line each with figure, baseline, ratio and verdict: a trivial run_code under
//    5 ms median end to end, and a brokered call under 0.2 ms more than the same call made directly.
// The machine is shared: repeat runs and read ranges, one run proves little.
import ivm from 'isolated-vm';
import * as v from 'valibot';
import { createIsolateHost } from '../host/isolates/index.ts';
import { createMemoryEventLog } from '../host/store/memory.ts';
import { type AgentScope, createRegistry, defineTool, type ToolCall } from '../host/tools/index.ts';
import { createPtcExecutor } from '../host/tools/ptc/index.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const TRIVIAL_TARGET_MS = 5;
const CALL_OVERHEAD_TARGET_MS = 0.2;
const LOOP_RUNS = Number(process.env.BENCH_LOOP_RUNS ?? 20);
const CALLS = 200;

const agent: AgentScope = { id: 'bench', sessionId: 'bench', services: {} };
const quantile = (xs: number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
};
const stats = (xs: number[]) => ({ median: quantile(xs, 0.5), p99: quantile(xs, 0.99) });
const fmt = (ms: number): string => (ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`);
const verdict = (met: boolean): string => (met ? 'MET' : 'NOT MET');
const time = async (n: number, fn: () => Promise<unknown> | unknown): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
};

const isolates = createIsolateHost({ workers: 2, prewarm: 2 });
const registry = createRegistry({ log: createMemoryEventLog() });
const scope = registry.scope('code');
scope.mount(createPtcExecutor({ isolates }));
scope.register(
  defineTool({
    name: 'noop',
    description: 'Does nothing.',
    parameters: v.object({}),
    output: { schema: v.null() },
    isConcurrencySafe: () => true,
    execute: () => null,
  }),
);

let seq = 0;
const runCode = async (code: string): Promise<void> => {
  const call: ToolCall = { id: `p${++seq}`, name: 'run_code', arguments: { code, description: 'bench' } };
  const [result] = await scope.execute([call], { agent, mode: 'code' });
  if (!result?.ok) throw new Error(`run_code failed: ${JSON.stringify(result?.content)}`);
};
const direct = async (): Promise<void> => {
  const [result] = await scope.execute([{ id: `n${++seq}`, name: 'noop', arguments: {} }], {
    agent,
    mode: 'native',
  });
  if (!result?.ok) throw new Error('noop failed');
};

try {
  // Warm up: worker start, esbuild service, JIT on both sides.
  await time(20, () => runCode('return 1'));
  await time(200, direct);

  const pipeline = stats(await time(RUNS, () => runCode('return 1')));
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

  const loop = `for (let i = 0; i < ${CALLS}; i++) await tools.noop({});\nreturn 1;`;
  const all = `await Promise.all(Array.from({ length: ${CALLS} }, () => tools.noop({})));\nreturn 1;`;
  const loopRuns = await time(LOOP_RUNS, () => runCode(loop));
  const allRuns = await time(LOOP_RUNS, () => runCode(all));
  const directCalls = stats(await time(RUNS * 5, direct));
  const perLoopCall = (quantile(loopRuns, 0.5) - pipeline.median) / CALLS;
  const perAllCall = (quantile(allRuns, 0.5) - pipeline.median) / CALLS;

  console.log(
    `run_code "return 1", full pipeline (${RUNS} runs): median ${fmt(pipeline.median)}, p99 ${fmt(pipeline.p99)}`,
  );
  console.log(
    `isolated-vm in-process, new context + eval:  median ${fmt(bareContext.median)}, p99 ${fmt(bareContext.p99)}  (ratio ${(pipeline.median / bareContext.median).toFixed(1)}x)`,
  );
  console.log(
    `isolated-vm in-process, new isolate + eval:  median ${fmt(bareIsolate.median)}, p99 ${fmt(bareIsolate.p99)}  (ratio ${(pipeline.median / bareIsolate.median).toFixed(1)}x)`,
  );
  console.log(
    `program with ${CALLS} sequential tools.noop calls (${LOOP_RUNS} runs): median ${fmt(quantile(loopRuns, 0.5))}, per call ${fmt(perLoopCall)}`,
  );
  console.log(
    `program with ${CALLS} tools.noop calls under Promise.all: median ${fmt(quantile(allRuns, 0.5))}, per call ${fmt(perAllCall)}`,
  );
  console.log(
    `direct noop through scope.execute (${RUNS * 5} calls): median ${fmt(directCalls.median)}, p99 ${fmt(directCalls.p99)}`,
  );
  console.log(
    `per-call ratio, in-program sequential / direct: ${(perLoopCall / directCalls.median).toFixed(1)}x; Promise.all / direct: ${(perAllCall / directCalls.median).toFixed(1)}x`,
  );
  // Every run is a fresh isolate on a machine whose threads sleep between runs: short programs pay
  // more per call. The same measurement at other program sizes, for the whole picture.
  for (const n of [20, 1000]) {
    const runs = await time(Math.max(5, Math.round(4000 / n)), () =>
      runCode(`for (let i = 0; i < ${n}; i++) await tools.noop({});\nreturn 1;`),
    );
    const per = (quantile(runs, 0.5) - pipeline.median) / n;
    console.log(
      `program with ${n} sequential tools.noop calls: median ${fmt(quantile(runs, 0.5))}, per call ${fmt(per)} (${fmt(per - directCalls.median)} more than direct)`,
    );
  }
  const overhead = perLoopCall - directCalls.median;
  console.log(
    `TARGET trivial run_code: median ${fmt(pipeline.median)} vs target ${fmt(TRIVIAL_TARGET_MS)}; baseline bare new isolate + eval ${fmt(bareIsolate.median)} (ratio ${(pipeline.median / bareIsolate.median).toFixed(2)}x) → ${verdict(pipeline.median < TRIVIAL_TARGET_MS)}`,
  );
  console.log(
    `TARGET brokered call: ${fmt(perLoopCall)} per sequential call vs ${fmt(directCalls.median)} direct = ${fmt(overhead)} more (ratio ${(perLoopCall / directCalls.median).toFixed(1)}x) vs target < ${fmt(CALL_OVERHEAD_TARGET_MS)} more → ${verdict(overhead < CALL_OVERHEAD_TARGET_MS)}`,
  );
} finally {
  await isolates.close();
}
