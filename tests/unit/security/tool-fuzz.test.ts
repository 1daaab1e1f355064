// Issue 10: one tool call must never hold the control plane. A property-based fuzz over every tool
// the service registers (every preset's tools, run_code, workflow and ralph, the terminal tools),
// with hostile but schema-valid arguments against the memory sandbox provider and a workspace of
// hostile files (up to 10 MiB). Each call must settle with a result (15 s hang guard), and the event
// loop must never freeze meanwhile. The fuzz runs in a worker thread (tool-fuzz.worker.ts)
// because a call that spins forever freezes the loop it runs on: this thread watches the worker's
// heartbeat and ends it when the beat stops, naming the call that froze it. How long calls hold
// the loop short of a freeze is measured by bench/tool-lag.ts (a timing claim, not a test's).
import { Worker } from 'node:worker_threads';
import { expect, it } from 'vitest';
import type { FuzzMessage, FuzzOptions, ToolStats } from './tool-fuzz.worker.ts';

/** No heartbeat for this long: the worker's event loop is frozen. */
const FROZEN_MS = 5_000;
/** Loading the service's modules in a fresh thread takes seconds on a loaded machine. */
const STARTUP_MS = 60_000;

const FUZZ: FuzzOptions = {
  seed: 20_240_610,
  runs: Number(process.env.DSH_FUZZ_RUNS ?? 12),
  callBoundMs: 15_000,
  ...(process.env.DSH_FUZZ_ONLY ? { only: process.env.DSH_FUZZ_ONLY.split(',') } : {}),
};

const runFuzz = (): Promise<{ failures: string[]; stats: ToolStats[] }> =>
  new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./tool-fuzz.worker.ts', import.meta.url), { workerData: FUZZ });
    let lastBeat = Date.now();
    let started = false;
    let current = '(starting)';
    let finished = false;
    const failures: string[] = [];
    const watchdog = setInterval(() => {
      if (Date.now() - lastBeat < (started ? FROZEN_MS : STARTUP_MS)) return;
      finished = true;
      clearInterval(watchdog);
      void worker.terminate();
      failures.push(`the event loop froze for more than ${FROZEN_MS} ms during ${current}`);
      resolve({ failures, stats: [] });
    }, 250);
    worker.on('message', (message: FuzzMessage) => {
      lastBeat = Date.now();
      started = true;
      if (message.type === 'call') current = `${message.tool} ${message.args}`;
      if (message.type === 'failure') failures.push(message.failure);
      if (message.type === 'done') {
        finished = true;
        clearInterval(watchdog);
        resolve({ failures, stats: message.stats });
      }
    });
    worker.on('error', (error) => {
      clearInterval(watchdog);
      reject(error);
    });
    worker.on('exit', (code) => {
      clearInterval(watchdog);
      if (!finished) reject(new Error(`the fuzz worker exited (${code}) during ${current}`));
    });
  });

it('every registered tool settles on hostile arguments with a result, and none freezes the event loop', async () => {
  const { failures, stats } = await runFuzz();
  if (process.env.DSH_FUZZ_REPORT)
    for (const s of stats)
      console.log(
        `${s.tool.padEnd(20)} ${s.preset.padEnd(9)} calls ${String(s.calls).padStart(3)}  max lag ${s.maxLagMs.toFixed(0).padStart(5)} ms  max settle ${s.maxSettleMs.toFixed(0).padStart(6)} ms`,
      );
  expect(failures).toEqual([]);
  if (FUZZ.only) return;
  // Every tool the service registers was reached.
  const tools = new Set(stats.map((s) => s.tool));
  for (const name of [
    'bash',
    'read',
    'edit',
    'str_replace_editor',
    'terminal_send',
    'run_code',
    'workflow',
    'ralph',
  ])
    expect(tools).toContain(name);
}, 120_000);
