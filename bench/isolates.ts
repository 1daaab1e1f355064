// Isolate host benchmark: `node --no-node-snapshot bench/isolates.ts`.
// 1. A trivial run (`return 1`) end to end through the host (compile cache hit, pre-warmed isolate,
//    IPC to a worker) vs the same code in a bare isolated-vm isolate+context in this process.
// 2. Per-call cost of `tools.x()` inside a program vs calling onCall directly.
// 3. 200 concurrent programs x 50 calls each: total time and calls per second.
// Then the targets, with figure, baseline, ratio and verdict: a trivial run under 5 ms median, and a
// brokered call under 0.2 ms more than calling onCall directly. The machine is shared: repeat runs.
import ivm from 'isolated-vm';
import type { JsonValue } from '../host/isolates/index.ts';
import { createIsolateHost } from '../host/isolates/index.ts';

const stats = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { median: at(0.5), p99: at(0.99) };
};
const fmt = (ms: number) => `${ms.toFixed(3)} ms`;
const verdict = (met: boolean): string => (met ? 'MET' : 'NOT MET');
const TRIVIAL_TARGET_MS = 5;
const CALL_OVERHEAD_TARGET_MS = 0.2;
const time = async (fn: () => Promise<unknown>): Promise<number> => {
  const start = performance.now();
  await fn();
  return performance.now() - start;
};

const onCall = async (_name: string, args: JsonValue): Promise<JsonValue> => args;
const host = createIsolateHost({ workers: 2, prewarm: 4 });
const run = (code: string, bindings: string[] = []) => host.run({ code, bindings, onCall });

// --- 1. trivial run -----------------------------------------------------------------------------
for (let i = 0; i < 20; i++) await run('return 1');
const REPS = 300;
const hostSamples: number[] = [];
for (let i = 0; i < REPS; i++) {
  hostSamples.push(await time(() => run('return 1')));
  // Give the worker the moment it needs to pre-warm the next isolate, as an idle service would.
  if (i % 2 === 1) await new Promise((r) => setTimeout(r, 5));
}
const uncached: number[] = [];
for (let i = 0; i < 100; i++) uncached.push(await time(() => run(`return ${i} // ${Math.random()}`)));

const bareSamples: number[] = [];
for (let i = 0; i < REPS; i++) {
  bareSamples.push(
    await time(async () => {
      const isolate = new ivm.Isolate({ memoryLimit: 64 });
      const context = await isolate.createContext();
      await context.eval('(async () => { return 1 })()', { promise: true, copy: true });
      isolate.dispose();
    }),
  );
}
const h = stats(hostSamples);
const u = stats(uncached);
const b = stats(bareSamples);
console.log('1. trivial run `return 1`');
console.log(`   host end to end (compile cached, pre-warmed): median ${fmt(h.median)}  p99 ${fmt(h.p99)}`);
console.log(`   host end to end (fresh source, esbuild each): median ${fmt(u.median)}  p99 ${fmt(u.p99)}`);
console.log(
  `   bare isolated-vm in-process (isolate+context+eval+dispose): median ${fmt(b.median)}  p99 ${fmt(b.p99)}`,
);
console.log(`   ratio host/bare (median): ${(h.median / b.median).toFixed(2)}x`);

// --- 2. per-call cost ---------------------------------------------------------------------------
const CALLS = 2000;
const sequential = `for (let i = 0; i < ${CALLS}; i++) await tools.x({ i }); return 1`;
await run(sequential, ['x']);
const withCalls = await time(() => run(sequential, ['x']));
const without = await time(() =>
  run(`for (let i = 0; i < ${CALLS}; i++) await Promise.resolve({ i }); return 1`),
);
const direct = await time(async () => {
  for (let i = 0; i < CALLS; i++) await onCall('x', { i });
});
const perCall = (withCalls - without) / CALLS;
console.log(`2. per call (${CALLS} sequential awaits)`);
console.log(`   tools.x() inside a program: ${(perCall * 1000).toFixed(1)} µs/call`);
console.log(`   onCall directly:            ${((direct / CALLS) * 1000).toFixed(2)} µs/call`);
console.log(`   ratio: ${(perCall / (direct / CALLS)).toFixed(0)}x`);

// --- 2b. per call by program size: every run is a fresh (cold) isolate, so short programs pay more
for (const n of [20, 200]) {
  const reps = Math.max(5, Math.round(4000 / n));
  const code = `for (let i = 0; i < ${n}; i++) await tools.x({ i }); return 1`;
  const base = `for (let i = 0; i < ${n}; i++) await Promise.resolve({ i }); return 1`;
  await run(code, ['x']);
  const calls = await time(async () => {
    for (let r = 0; r < reps; r++) await run(code, ['x']);
  });
  const plain = await time(async () => {
    for (let r = 0; r < reps; r++) await run(base);
  });
  console.log(`   ${n} calls per program: ${(((calls - plain) / (reps * n)) * 1000).toFixed(1)} µs/call net`);
}

// --- 3. 200 programs x 50 calls ------------------------------------------------------------------
const PROGRAMS = 200;
const EACH = 50;
const program = `let n = 0; for (let i = 0; i < ${EACH}; i++) n += (await tools.x({ i })).i; return n`;
let ok = 0;
const total = await time(async () => {
  const outcomes = await Promise.all(Array.from({ length: PROGRAMS }, () => run(program, ['x'])));
  ok = outcomes.filter((o) => o.ok && o.value === (EACH * (EACH - 1)) / 2).length;
});
console.log(`3. ${PROGRAMS} concurrent programs x ${EACH} calls`);
console.log(
  `   total ${fmt(total)}, ${ok}/${PROGRAMS} correct, ${Math.round((PROGRAMS * EACH) / (total / 1000))} calls/s`,
);

const overhead = perCall - direct / CALLS;
console.log(
  `TARGET trivial run: median ${fmt(h.median)} vs target ${fmt(TRIVIAL_TARGET_MS)}; baseline bare isolate ${fmt(b.median)} (ratio ${(h.median / b.median).toFixed(2)}x) → ${verdict(h.median < TRIVIAL_TARGET_MS)}`,
);
console.log(
  `TARGET brokered call: ${(perCall * 1000).toFixed(1)} µs vs ${((direct / CALLS) * 1000).toFixed(2)} µs direct = ${(overhead * 1000).toFixed(1)} µs more vs target < ${CALL_OVERHEAD_TARGET_MS * 1000} µs → ${verdict(overhead < CALL_OVERHEAD_TARGET_MS)}`,
);

await host.close();
