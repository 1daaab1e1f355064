// What a suspended program costs: `node --no-node-snapshot bench/code-mode-waiting.ts`.
// A run_code program that awaits a slow tool (a test run, a job, an approval) keeps its isolate
// alive while it waits. Measured here, with the isolate host's defaults (2 workers of 1024 MB,
// 64 MB isolates):
// 1. resident memory per waiting program (small programs, and ones holding 16 MB each), from the
//    workers' /proc statm, against the idle workers as the baseline;
// 2. CPU the workers burn while programs wait (utime+stime from /proc/<pid>/stat), against the
//    same span with nothing waiting;
// 3. how many programs can wait at once (the host sizes a worker's concurrency by memory), and
//    the latency of a quick `return 1` while that many wait, against the same with none waiting.
import { readFileSync } from 'node:fs';
import type { IsolateHost, JsonValue } from '../host/isolates/index.ts';
import { createIsolateHost } from '../host/isolates/index.ts';
import { runsPerWorker } from '../host/isolates/memory.ts';

const MB = 1024 * 1024;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const rssOf = (pids: number[]) =>
  pids.reduce((sum, pid) => sum + Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * 4096, 0);
const cpuOf = (pids: number[]) =>
  pids.reduce((sum, pid) => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return sum + Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (1/100 s)
  }, 0);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** Starts `count` programs that each run `code` and then wait on tools.wait() until released. */
const waiting = (host: IsolateHost, count: number, code: string) => {
  let release = (): void => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let arrived = 0;
  const onCall = async (_name: string, args: JsonValue) => {
    arrived++;
    await gate;
    return args;
  };
  const runs = Array.from({ length: count }, () =>
    host.run({ code: `${code}; await tools.wait({}); return 1`, bindings: ['wait'], onCall }),
  );
  const allWaiting = async (expected = count) => {
    while (arrived < expected) await sleep(10);
  };
  return { runs, allWaiting, release, arrived: () => arrived };
};

const quickLatency = async (host: IsolateHost, reps = 30) => {
  const samples: number[] = [];
  for (let i = 0; i < reps; i++) {
    const start = performance.now();
    await host.run({ code: 'return 1', bindings: [], onCall: async () => null });
    samples.push(performance.now() - start);
    await sleep(5);
  }
  return median(samples);
};

const host = createIsolateHost({ workers: 2, prewarm: 2 });
const warm = () =>
  Promise.all([1, 2, 3, 4].map(() => host.run({ code: 'return 1', bindings: [], onCall: async () => null })));
await warm();
await sleep(500);
const pids = host.workerPids();
const perWorker = runsPerWorker(1024, 64);
const atOnce = perWorker * pids.length;

// --- 1. memory per waiting program --------------------------------------------------------------
const idleRss = rssOf(pids);
const small = waiting(host, atOnce, 'const x = 1');
await small.allWaiting();
await sleep(300);
const smallRss = rssOf(pids);
const SPAN_MS = 2_000;
const cpuSmallStart = cpuOf(pids);
await sleep(SPAN_MS);
const cpuSmall = cpuOf(pids) - cpuSmallStart;
small.release();
await Promise.all(small.runs);
await sleep(500);
const idleRss2 = rssOf(pids);
const heavy = waiting(
  host,
  atOnce,
  "const keep = []; for (let i = 0; i < 16; i++) keep.push(['x'.repeat(2 ** 20), i].join(''))",
);
await heavy.allWaiting();
await sleep(300);
const heavyRss = rssOf(pids);

// --- 2. CPU while waiting -----------------------------------------------------------------------
const cpuWaitingStart = cpuOf(pids);
await sleep(SPAN_MS);
const cpuWaiting = cpuOf(pids) - cpuWaitingStart;

// --- 3. how many wait at once; a quick run meanwhile ---------------------------------------------
const extra = waiting(host, 4, 'const y = 2');
await sleep(500);
const queuedBeyond = extra.arrived();
heavy.release();
await Promise.all(heavy.runs);
await extra.allWaiting(4);
extra.release();
await Promise.all(extra.runs);
await sleep(500);
const cpuIdleStart = cpuOf(pids);
await sleep(SPAN_MS);
const cpuIdle = cpuOf(pids) - cpuIdleStart;
const quickIdle = await quickLatency(host);
// Fewer than fit, so the quick runs have room: what waiting programs cost the others.
const some = waiting(host, atOnce - 2, 'const z = 3');
await some.allWaiting();
const quickBusy = await quickLatency(host);
some.release();
await Promise.all(some.runs);
await host.close();

const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;
console.log(
  `programs that can wait at once: ${atOnce} (${pids.length} workers x ${perWorker}, sized by memory: each may keep its 64 MB heap)`,
);
console.log(`1. resident memory of the workers: idle ${mb(idleRss)} (baseline)`);
console.log(
  `   ${atOnce} small programs waiting: +${mb(smallRss - idleRss)}, ${mb((smallRss - idleRss) / atOnce)} per program`,
);
console.log(
  `   ${atOnce} programs holding 16 MB each, waiting: +${mb(heavyRss - idleRss2)}, ${mb((heavyRss - idleRss2) / atOnce)} per program`,
);
console.log(
  `2. worker CPU over ${SPAN_MS} ms with ${atOnce} small / 16 MB programs waiting: ${cpuSmall * 10} / ${cpuWaiting * 10} ms; with none (baseline): ${cpuIdle * 10} ms`,
);
console.log(
  `3. with ${atOnce} waiting, ${queuedBeyond} of 4 more programs started (the rest queued until a slot freed)`,
);
console.log(
  `   quick run \`return 1\` while ${atOnce - 2} programs wait: median ${quickBusy.toFixed(2)} ms; with none waiting (baseline): ${quickIdle.toFixed(2)} ms (x${(quickBusy / quickIdle).toFixed(2)})`,
);
