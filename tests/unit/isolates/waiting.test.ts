// A program's own work and its waiting are budgeted apart: CPU time bounds what it computes, the
// wall clock bounds how long it may wait on its tools. Small budgets keep the suite fast: a CPU
// budget of 200 ms with tools that take a second stands for a 10 s budget and a 5-minute tool.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IsolateHost, JsonValue } from '../../../host/isolates/index.ts';
import { until } from '../../helpers/until.ts';
import { failure, runner, sleep, startHost, value } from './helpers.ts';

let host: IsolateHost;
const run = runner(() => host);
const limits = { cpuMs: 200, wallMs: 5_000, memoryMb: 32 };

beforeAll(async () => {
  host = await startHost({ workers: 2, prewarm: 2, maxRunsPerWorker: 2, limits });
});
afterAll(() => host.close());

/** A tool that takes `ms` (standing for one that takes minutes). */
const slowTool = (ms: number) => async (name: string, args: JsonValue) => {
  await sleep(ms);
  return { name, args };
};

describe('waiting on tools', () => {
  it('costs no CPU budget: a program waits 2 s on its tools with a 200 ms CPU budget', async () => {
    const outcome = await run({
      code: 'const a = await tools.echo({ n: 1 }); const b = await tools.echo({ n: 2 }); return a.args.n + b.args.n',
      onCall: slowTool(1_000),
    });
    expect(value(outcome)).toBe(3);
    // The set-up, not a speed claim: the program did wait past ten times its CPU budget.
    expect(outcome.stats.wallMs).toBeGreaterThanOrEqual(2_000);
  });

  it('a program that spins is ended by its CPU budget long before the wall clock', async () => {
    // The message names the CPU budget, not the 5 s wall clock; on a machine so loaded that an
    // inline stretch took 4x the budget left without using it, the run ends as starved instead
    // (worker-run.ts, INLINE_WAIT_FACTOR): still long before the wall clock.
    const budgetOrStarved =
      /^(the program used more than 200 ms of CPU time|the machine was too busy for the program)/;
    const spin = await run({ code: 'for (;;) {}' });
    expect(failure(spin).kind).toBe('timeout');
    expect(failure(spin).message).toMatch(budgetOrStarved);
    const afterWaiting = await run({ code: 'await tools.echo({}); for (;;) {}', onCall: slowTool(500) });
    expect(failure(afterWaiting).kind).toBe('timeout');
    expect(failure(afterWaiting).message).toMatch(budgetOrStarved);
  });

  it('the wall clock still ends a program that waits past it', async () => {
    const outcome = await run({
      code: 'await tools.echo({})',
      onCall: slowTool(3_000),
      limits: { wallMs: 1_000 },
    });
    expect(failure(outcome)).toEqual({ kind: 'timeout', message: 'the program ran longer than 1000 ms' });
  });

  it('a run waiting on a slow tool gives its dedicated worker back to the others', async () => {
    await until(() => host.workerPids().length === 2, { what: 'both workers' });
    // A gets a worker to itself (the other stays open), then waits until C has run. B1 and B2 fill
    // the other worker. Had A kept its worker, C would queue until A's wall clock ran out.
    let cDone = (): void => undefined;
    const cFinished = new Promise<void>((resolve) => (cDone = resolve));
    let aCalled = (): void => undefined;
    const aWaiting = new Promise<void>((resolve) => (aCalled = resolve));
    const a = run({
      code: 'return (await tools.echo({ who: "a" })).args.who',
      onCall: async (name, args) => {
        aCalled();
        await cFinished;
        return { name, args };
      },
    });
    await aWaiting;
    const waitForC = async (name: string, args: JsonValue) => {
      await cFinished;
      return { name, args };
    };
    const b = [1, 2].map((i) =>
      run({ code: `return (await tools.echo({ i: ${i} })).args.i`, onCall: waitForC }),
    );
    const c = await run({ code: 'return "c"' });
    cDone();
    expect(value(c)).toBe('c');
    const outcomeA = await a;
    expect(value(outcomeA)).toBe('a');
    expect(outcomeA.stats.inline).toBe(true);
    expect((await Promise.all(b)).map(value)).toEqual([1, 2]);
    // The released worker still serves its run correctly when the call comes back.
    expect(value(await run({ code: 'await tools.echo({}); return 1 + 1' }))).toBe(2);
  });
});
