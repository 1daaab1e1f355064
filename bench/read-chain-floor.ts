// The floor of a program's sequential tool calls in the service's topology, with no work in it
// (issue 33's "20 sequential tools.read": is it the hops?): bench/lib/chain-floor.ts, alone. Prints
// p50/p90 of a "program" of CALLS relayed calls and each process's CPU a program. Compare with the
// 20-read row of bench/http-latency.ts (which also measures the parts of this floor in its run).
// Run: node bench/read-chain-floor.ts   (BENCH_RUNS programs, default 300; BENCH_CALLS, default 20)
import { readFileSync } from 'node:fs';
import { startChainFloor } from './lib/chain-floor.ts';

const CALLS = Number(process.env.BENCH_CALLS ?? 20);
const RUNS = Number(process.env.BENCH_RUNS ?? 300);

const floor = await startChainFloor(CALLS);
const cpuMs = (pid: number): number => {
  const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] as string).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in 10 ms ticks
};
for (let i = 0; i < 30; i++) await floor.program();
const before = floor.pids.map(cpuMs);
const walls: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const started = performance.now();
  await floor.program();
  walls.push(performance.now() - started);
}
const used = floor.pids.map((pid, i) => (cpuMs(pid) - (before[i] as number)) / RUNS);
walls.sort((a, b) => a - b);
const at = (q: number) => (walls[Math.floor(walls.length * q)] as number).toFixed(2);
console.log(
  `read-chain-floor: ${RUNS} programs of ${CALLS} sequential relayed calls, no work in any process`,
);
console.log(
  `p50 ${at(0.5)} ms, p90 ${at(0.9)} ms a program (${(Number(at(0.5)) / CALLS).toFixed(3)} ms a call)`,
);
console.log(
  `CPU a program: "service" ${used[0]?.toFixed(2)} ms, "worker" ${used[1]?.toFixed(2)} ms, "sandboxd" ${used[2]?.toFixed(2)} ms`,
);
floor.stop();
