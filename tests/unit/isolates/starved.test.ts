// A program's CPU budget counts CPU its worker process really spent on it, not time it waited for
// a core (worker-run.ts, cpu.ts). Under load a well-behaved program was killed as "used more than
// N ms of CPU time": isolated-vm's `cpuTime` and `timeout` count wall-clock time while an isolate
// is entered. Guarantee, both ways a worker enters an isolate (inline: a run alone on one of two
// workers, on the worker's own thread; queued: on isolated-vm's thread pool, as workflows run): a
// program that computes little but whose worker is stopped mid-entry for longer than its CPU budget
// (as a process starved of cores is) completes; a busy loop still ends with the CPU-budget error;
// the wall clock still ends a program held past it. Real worker processes, real isolated-vm.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IsolateHost, RunLimits, RunOutcome } from '../../../host/isolates/index.ts';
import { until } from '../../helpers/until.ts';
import { echo, failure, runner, sleep, startHost, value } from './helpers.ts';

const limits = { cpuMs: 1_500, wallMs: 60_000, memoryMb: 32 };
/** Longer than the CPU budget, and than the jump the spinner looks for. */
const STOP_MS = 3_000;

/**
 * After its call returns, computes for at most `windowMs` of wall clock; when it sees the clock
 * jump by over 1.5 s (its process was stopped) it computes 100 ms more and answers 'stopped'. At
 * most `windowMs` + 100 ms of CPU either way.
 */
const spinner = (windowMs: number) => `await tools.echo({});
  const start = Date.now();
  let last = start;
  let stoppedAt = 0;
  for (;;) {
    const now = Date.now();
    if (!stoppedAt && now - last > 1500) stoppedAt = now;
    if (stoppedAt && now - stoppedAt > 100) return 'stopped';
    if (!stoppedAt && now - start > ${windowMs}) return 'not stopped';
    last = now;
  }`;

let host: IsolateHost;
const run = runner(() => host);

beforeAll(async () => {
  // A grace long enough that the host's backstops never act before the worker has answered.
  host = await startHost({ workers: 2, prewarm: 2, limits, killGraceMs: 10_000 });
  await until(() => host.workerPids().length === 2, { what: 'both workers' });
});
afterAll(() => host.close());

/** Stops every worker process for `ms` (no core at all, as a starved process), then lets them go on. */
const stopWorkers = async (ms: number): Promise<void> => {
  const pids = host.workerPids();
  for (const pid of pids) process.kill(pid, 'SIGSTOP');
  try {
    await sleep(ms);
  } finally {
    for (const pid of pids) process.kill(pid, 'SIGCONT');
  }
};

/**
 * Runs the spinner and stops its worker once it spins; again until the stop landed inside the spin.
 * The default window keeps it under the 1.5 s budget (1.1 s of CPU at most).
 */
const spinStopped = async (
  inline: boolean,
  runLimits: Partial<RunLimits> = {},
  windowMs = 1_000,
): Promise<RunOutcome> => {
  for (let attempt = 0; attempt < 10; attempt++) {
    let stopped: Promise<void> = Promise.resolve();
    const outcome = await run({
      code: spinner(windowMs),
      inline,
      limits: runLimits,
      onCall: async (name, args) => {
        stopped = sleep(100).then(() => stopWorkers(STOP_MS));
        return echo(name, args);
      },
    });
    await stopped;
    expect(outcome.stats.inline).toBe(inline);
    // The spin had ended before the stop landed (a slow machine): try again.
    if (outcome.ok && outcome.value === 'not stopped') continue;
    return outcome;
  }
  throw new Error('the stop never landed inside the spin');
};

describe.each([
  ['inline', true],
  ['queued', false],
] as const)('the CPU budget of a run (%s)', (_mode, inline) => {
  it('does not count the time its worker waited for a core', async () => {
    expect(value(await spinStopped(inline))).toBe('stopped');
    // Its worker serves the next run.
    expect(value(await run({ code: 'return "next"', inline }))).toBe('next');
  }, 120_000);

  it('still ends a busy loop, with the CPU-budget error', async () => {
    const outcome = await run({ code: 'await tools.echo({}); for (;;) {}', inline, limits: { cpuMs: 300 } });
    expect(outcome.stats.inline).toBe(inline);
    expect(failure(outcome)).toEqual({
      kind: 'timeout',
      message: 'the program used more than 300 ms of CPU time',
    });
  }, 60_000);

  it('leaves the wall clock to end a program held past it', async () => {
    expect(failure(await spinStopped(inline, { wallMs: 2_000 }))).toEqual({
      kind: 'timeout',
      message: 'the program ran longer than 2000 ms',
    });
  }, 120_000);
});

// An inline entry's one interrupt is isolated-vm's timeout, set to INLINE_WAIT_FACTOR (4) × the CPU
// budget left: a program starved for longer inside one entry is cut off, and told so, never as
// having used its CPU budget (here 500 ms: the stop of 3 s is past 4 × 500 ms).
it('an inline program starved past the wait factor ends as starved, not as over its CPU budget', async () => {
  const outcome = await spinStopped(true, { cpuMs: 500 }, 300);
  expect(failure(outcome)).toMatchObject({
    kind: 'timeout',
    message: expect.stringMatching(
      /^the machine was too busy for the program: one stretch of it took \d+ ms and got only \d+ ms of CPU time \(its CPU budget: 500 ms\)$/,
    ),
  });
}, 120_000);
