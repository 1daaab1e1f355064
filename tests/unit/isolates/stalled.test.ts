// A program that can never finish ends at once, as `stalled`, instead of holding its isolate until
// the wall clock (worker-run.ts): it awaits a promise nothing can settle, with no tool call pending
// and no entry into its isolate on the way. The other half of the rule matters more: a program that
// waits on anything that can still happen (a slow tool, a chain of promises that a tool's result
// settles later, calls it started and did not await, microtasks) is never ended by it. Every case
// runs both ways a worker enters an isolate: inline (a run alone on one of two workers) and queued
// on isolated-vm's thread pool (`inline: false`, as workflows run). The wall clock is the
// service's default (10 minutes): a run that ends at all within the test's timeout ended early.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IsolateHost, JsonValue, RunOutcome } from '../../../host/isolates/index.ts';
import { until } from '../../helpers/until.ts';
import type { RunInput } from './helpers.ts';
import { echo, failure, runner, sleep, startHost, value } from './helpers.ts';

const limits = { cpuMs: 2_000, wallMs: 600_000, memoryMb: 32 };
const STALLED = {
  kind: 'stalled',
  message:
    'the program awaits a promise that nothing can settle (no tool call of it is pending, and ' +
    'programs have no timers or other events), so it would never finish',
};

let host: IsolateHost;
const run = runner(() => host);

beforeAll(async () => {
  host = await startHost({ workers: 2, prewarm: 2, limits });
  await until(() => host.workerPids().length === 2, { what: 'both workers' });
});
afterAll(() => host.close());

const MODES = [
  ['inline', true],
  ['queued', false],
] as const;

/** One run in the given mode; an inline run must really have gone inline (it runs alone). */
const runAs = async (inline: boolean, input: RunInput): Promise<RunOutcome> => {
  const outcome = await run({ ...input, inline });
  expect(outcome.stats.inline).toBe(inline);
  return outcome;
};

/** A tool that answers after `ms` (standing for one that takes minutes). */
const slow =
  (ms: number) =>
  async (name: string, args: JsonValue): Promise<JsonValue> => {
    await sleep(ms);
    return echo(name, args);
  };

describe.each(MODES)('a program that can never finish (%s)', (_mode, inline) => {
  it('await new Promise(() => {}) ends at once as stalled, not at the wall clock', async () => {
    const outcome = await runAs(inline, { code: 'console.log("waiting"); await new Promise(() => {})' });
    expect(failure(outcome)).toEqual(STALLED);
    expect(outcome.logs).toEqual(['waiting']);
    expect(outcome.stats.wallMs).toBeLessThan(limits.wallMs);
  });

  it('a promise whose resolve is dropped, after tool calls: stalled once the last call settled', async () => {
    let settled = 0;
    const outcome = await runAs(inline, {
      code: `
        const a = await tools.echo({ n: 1 });
        tools.echo({ n: 2 }); // started, not awaited: the program may not be ended before it settles
        await new Promise((resolve) => { const lost = resolve; });
        return a;`,
      onCall: async (name, args) => {
        await sleep(200);
        settled++;
        return echo(name, args);
      },
    });
    expect(failure(outcome)).toEqual(STALLED);
    expect(settled).toBe(2);
    expect(outcome.stats.calls).toBe(2);
  });

  it('a program that deadlocks on itself (two promises awaiting each other) is stalled', async () => {
    const outcome = await runAs(inline, {
      code: `
        let b;
        const a = (async () => { await tools.echo({}); return await b; })();
        b = (async () => await a)();
        return await a;`,
    });
    expect(failure(outcome)).toEqual(STALLED);
  });

  it('has no FinalizationRegistry or timer that could resume it later', async () => {
    const outcome = await runAs(inline, {
      code: 'return [typeof FinalizationRegistry, typeof setTimeout, typeof setInterval]',
    });
    expect(value(outcome)).toEqual(['undefined', 'undefined', 'undefined']);
  });
});

describe.each(MODES)('a program that waits on what can still happen completes (%s)', (_mode, inline) => {
  it('awaiting a slow tool', async () => {
    const outcome = await runAs(inline, {
      code: 'return (await tools.echo({ n: 7 })).args.n',
      onCall: slow(300),
    });
    expect(value(outcome)).toBe(7);
  });

  it('a promise resolved later by a tool result, through a chain the program built', async () => {
    const outcome = await runAs(inline, {
      code: `
        let resolve;
        const gate = new Promise((r) => { resolve = r; });
        tools.echo({ n: 1 })
          .then((a) => tools.echo({ n: a.args.n + 1 }))
          .then((b) => Promise.resolve(b.args.n * 10))
          .then(resolve);
        return await gate;`,
      onCall: slow(150),
    });
    expect(value(outcome)).toBe(20);
  });

  it('calls started without await and settled out of order, then collected', async () => {
    const outcome = await runAs(inline, {
      code: `
        const started = [];
        for (let i = 0; i < 12; i++) started.push(tools.echo({ i }));
        const seen = [];
        await new Promise((done) => {
          for (const p of started) p.then((r) => { seen.push(r.args.i); if (seen.length === 12) done(); });
        });
        return seen.sort((a, b) => a - b);`,
      // Later calls answer first: the results come back in several entries, in reverse.
      onCall: async (name, args) => {
        await sleep(20 + (12 - (args as { i: number }).i) * 15);
        return echo(name, args);
      },
    });
    expect(value(outcome)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it('a long chain of promise reactions that settles within the entry', async () => {
    const outcome = await runAs(inline, {
      code: `
        let n = 0;
        await new Promise((done) => { const step = () => (++n === 10000 ? done() : Promise.resolve().then(step)); step(); });
        await tools.echo({});
        for (let i = 0; i < 1000; i++) await null;
        return n;`,
    });
    expect(value(outcome)).toBe(10_000);
  });

  it('a rejection left unhandled in one entry while a call is pending', async () => {
    const outcome = await runAs(inline, {
      code: 'Promise.reject(new Error("ignored")); return (await tools.echo({ n: 3 })).args.n',
      onCall: slow(100),
    });
    expect(value(outcome)).toBe(3);
  });

  it('200 calls, sequential and overlapping, answered at scattered times', async () => {
    const outcome = await runAs(inline, {
      code: `
        let sum = 0;
        for (let round = 0; round < 10; round++) {
          const batch = await Promise.all(Array.from({ length: 10 }, (_, i) => tools.echo({ n: round * 10 + i })));
          for (const r of batch) sum += r.args.n;
          for (let i = 0; i < 10; i++) sum += (await tools.echo({ n: 1 })).args.n;
        }
        return sum;`,
      onCall: async (name, args) => {
        const n = (args as { n: number }).n;
        if (n % 3 === 0) await sleep(n % 7);
        return echo(name, args);
      },
    });
    // 0..99 once, and 100 ones.
    expect(value(outcome)).toBe(4950 + 100);
    expect(outcome.stats.calls).toBe(200);
  });
});

describe('queued and inline entries of one run', () => {
  it('a run that waits past the release of its worker still completes, and a stall after it is seen', async () => {
    // Inline at first; waiting on its tool for longer than 200 ms gives its worker back, and
    // the entries that follow go to the thread pool.
    const completes = await run({
      code: 'await tools.echo({}); return (await tools.echo({ n: 2 })).args.n',
      onCall: slow(400),
    });
    expect(value(completes)).toBe(2);
    expect(completes.stats.inline).toBe(true);
    const stalls = await run({
      code: 'await tools.echo({}); await new Promise(() => {})',
      onCall: slow(400),
    });
    expect(stalls.stats.inline).toBe(true);
    expect(failure(stalls)).toEqual(STALLED);
  });

  it('many runs sharing the workers at once: the stalled ones end, the waiting ones complete', async () => {
    const waiting = Array.from({ length: 8 }, (_, k) =>
      run({
        inline: false,
        code: `let s = 0; for (let i = 0; i < 10; i++) s += (await tools.echo({ n: ${k} + i })).args.n; return s`,
        onCall: async (name, args) => {
          await sleep(((args as { n: number }).n * 7) % 23);
          return echo(name, args);
        },
      }),
    );
    const stuck = Array.from({ length: 4 }, () =>
      run({ inline: false, code: 'await tools.echo({}); await new Promise(() => {})', onCall: slow(50) }),
    );
    expect((await Promise.all(waiting)).map(value)).toEqual(Array.from({ length: 8 }, (_, k) => 10 * k + 45));
    for (const outcome of await Promise.all(stuck)) expect(failure(outcome)).toEqual(STALLED);
  });
});
