// Where a brokered `tools.x()` call's time goes, `node --no-node-snapshot bench/call-hops.ts`.
// A call goes isolate → worker thread (inline callback) → worker process IPC → host (frame
// checks, broker, onCall) → IPC → worker → isolate entry (deliver) → the program's next call. This
// bench takes that path apart without touching it:
// 1. whole: per call through the isolate host with onCall a no-op (programs of 20 and 200 calls,
//    one every GAP_MS like an idle service, minus the same program's cost without calls);
// 2. worker side alone: the same program on a prepared slot in THIS process, each call answered on
//    the next turn of the loop (no IPC): the isolate entry, the program's step and the bridge's
//    checks;
// 3. the IPC round trip alone: a message to a child process and back (two wake-ups, Node's framing);
// 4. the rest = 1 − 2 − 3: the host's share (frame checks, broker, reply batching) plus whatever
//    scheduling a loaded machine adds beyond the bare round trip.
// The machine is shared: repeat runs and read ranges.
import { setFlagsFromString } from 'node:v8';
import { ISOLATE_V8_FLAGS } from '../host/isolates/fork.ts';
import type { JsonValue } from '../host/isolates/index.ts';
import { compileProgram, createIsolateHost } from '../host/isolates/index.ts';
import { createSlot, startRun } from '../host/isolates/worker-run.ts';
import { ipcRoundTrip } from './ipc-floor.ts';

// The in-process worker side runs its isolates under the flags a worker process has.
for (const flag of ISOLATE_V8_FLAGS) setFlagsFromString(flag);
const REPS = Number(process.env.BENCH_RUNS ?? 40);
const GAP_MS = 10;
const ENVELOPE = '{"ok":true,"value":null}';
const limits = {
  wallMs: 30_000,
  cpuMs: 30_000,
  memoryMb: 64,
  maxOutputBytes: 65_536,
  maxCallBytes: 65_536,
  maxResultBytes: 65_536,
  maxCalls: 10_000,
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const loop = (n: number) => `for (let i = 0; i < ${n}; i++) await tools.x({ i });\nreturn 1;`;
const plain = (n: number) => `for (let i = 0; i < ${n}; i++) await Promise.resolve({ i });\nreturn 1;`;

/** Median ms of `reps` runs of `run(code)`, one every GAP_MS. */
async function timed(reps: number, run: () => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < reps; i++) {
    await sleep(GAP_MS);
    const started = performance.now();
    await run();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

/** One run of `code` on a fresh prepared slot in this process; each call settles on the next turn. */
async function inProcess(code: string): Promise<void> {
  const compiled = await compileProgram(code);
  if (!compiled.ok) throw new Error(compiled.message);
  const slot = await createSlot(limits.memoryMb);
  await sleep(GAP_MS);
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    const run = startRun(
      slot,
      {
        t: 'run',
        id: 1,
        src: compiled.program.js,
        bindings: ['x'],
        globalsJson: '{}',
        limits,
        inline: true,
      },
      {
        call: (message) => void setImmediate(() => run.deliver([[message.callId, ENVELOPE]])),
        done: (outcome) => (outcome.ok ? resolve() : reject(new Error(outcome.message))),
        inline: () => true,
      },
    );
    run.begin();
  });
  inProcessMs = performance.now() - started;
}
let inProcessMs = 0;

const host = createIsolateHost({ workers: 2, prewarm: 2 });
const onCall = async (): Promise<JsonValue> => null;
try {
  const ipc = await ipcRoundTrip(2000);
  console.log(`IPC round trip to a child process: ${(ipc * 1000).toFixed(1)} µs`);
  for (const n of [20, 200]) {
    const reps = n === 20 ? REPS : Math.max(10, REPS / 4);
    for (let i = 0; i < 5; i++) await host.run({ code: loop(n), bindings: ['x'], onCall });
    const whole =
      ((await timed(reps, () => host.run({ code: loop(n), bindings: ['x'], onCall }))) -
        (await timed(reps, () => host.run({ code: plain(n), bindings: [], onCall })))) /
      n;
    const worker: number[] = [];
    const base: number[] = [];
    for (let i = 0; i < reps; i++) {
      await inProcess(loop(n));
      worker.push(inProcessMs);
      await inProcess(plain(n));
      base.push(inProcessMs);
    }
    const workerSide = (median(worker) - median(base)) / n;
    const rest = whole - workerSide - ipc;
    const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;
    console.log(
      `${n} calls per program: whole ${us(whole)} per call = worker side ${us(workerSide)} + IPC round trip ${us(ipc)} + the rest (host, scheduling) ${us(rest)}`,
    );
  }
} finally {
  await host.close();
}
