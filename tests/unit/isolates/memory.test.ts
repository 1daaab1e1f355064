// The memory limit is real: what isolated-vm does not count (strings flattened and arrays grown
// between two garbage collections, which it lets run up to 1 GB past the limit) the worker sees
// in its resident set and ends the run that holds it, as `memory`, before the worker's cap would
// kill every run on it. CPU budgets are generous here so that no run ends by time instead.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IsolateHost, JsonValue } from '../../../host/isolates/index.ts';
import { createMemoryGovernor, DRAIN_MS, runsPerWorker } from '../../../host/isolates/memory.ts';
import { until } from '../../helpers/until.ts';
import { failure, runner, sleep, startHost, value } from './helpers.ts';

let host: IsolateHost;
const run = runner(() => host);
const limits = { cpuMs: 8_000, wallMs: 15_000, memoryMb: 32 };

beforeAll(async () => {
  // One worker: every run shares it with the attacker.
  host = await startHost({ workers: 1, prewarm: 2, workerRssMb: 600, limits });
});
afterAll(() => host.close());

const outOfMemory = { kind: 'memory', message: 'the program ran out of memory (limit 32 MB)' };

describe('the memory limit holds for what isolated-vm does not count', () => {
  it('a string joined past the limit between two collections → memory (it returned 268435458)', async () => {
    const outcome = await run({
      code: "const s = 'x'.repeat(2 ** 27); return [s + 'a', s + 'b'].join('').length",
    });
    expect(failure(outcome)).toEqual(outOfMemory);
  }, 30_000);

  it('a heap grown past the limit ends that run alone; its neighbours on the worker carry on', async () => {
    const [pid] = host.workerPids();
    let release = (): void => undefined;
    const attackDone = new Promise<void>((resolve) => (release = resolve));
    let waiting = 0;
    const waitForAttack = async (name: string, args: JsonValue) => {
      waiting++;
      await attackDone;
      return { name, args };
    };
    const neighbours = [1, 2, 3].map((i) =>
      run({ code: `return (await tools.echo({ i: ${i} })).args.i`, onCall: waitForAttack }),
    );
    await until(() => waiting === 3, { what: 'the neighbours in their calls' });
    const attack = await run({ code: 'return new Array(2 ** 26).fill(0).length' });
    release();
    expect(failure(attack)).toEqual(outOfMemory);
    expect((await Promise.all(neighbours)).map(value)).toEqual([1, 2, 3]);
    // Once its runs are over, the worker retires (what the attack grew may not be given back) and
    // a new one takes the next run.
    await until(() => host.workerPids().length === 1 && host.workerPids()[0] !== pid, {
      what: 'the worker replaced',
    });
    expect(value(await run({ code: 'return 2' }))).toBe(2);
  }, 30_000);

  it('memory kept while waiting on a tool counts against the limit', async () => {
    const outcome = await run({
      code: "const keep = []; for (let i = 0; i < 6; i++) { keep.push(['y'.repeat(2 ** 23), i].join('')); await tools.echo({ i }); } return keep.length",
      onCall: async (name, args) => {
        await sleep(50);
        return { name, args };
      },
    });
    expect(failure(outcome)).toEqual(outOfMemory);
  }, 30_000);

  it('a well-behaved program near its limit is left alone', async () => {
    const outcome = await run({
      code: "const keep = []; for (let i = 0; i < 5; i++) { keep.push(['z'.repeat(2 ** 20), i].join('')); await tools.echo({ i }); } return keep.length",
    });
    expect(value(outcome)).toBe(5);
  });
});

describe('who the memory governor blames', () => {
  const MB = 1024 * 1024;
  const ms = 1_000_000;

  it('ends what ran while the worker went over, but not a neighbour that ran a sliver of it (its heap is checked instead)', () => {
    // A poll late under load: three neighbours reached their tool calls (1 ms of CPU each) in the
    // same window as an allocation that took 300 ms.
    const governor = createMemoryGovernor(1024, 100 * MB, () => 0);
    const attack = { name: 'attack', memoryMb: 32, cpuNs: 300 * ms };
    const neighbours = [1, 2, 3].map((i) => ({ name: `n${i}`, memoryMb: 32, cpuNs: 1 * ms }));
    const verdict = governor.poll(900 * MB, [attack, ...neighbours]);
    expect(verdict.end.map((r) => r.name)).toEqual(['attack']);
    expect(verdict.spared.map((r) => r.name)).toEqual(['n1', 'n2', 'n3']);
  });

  it('does not blame a run that ran too little to have grown, even alone (its heap is checked instead)', () => {
    // Seen in CI under load: the only run of a poll had run 0.14 ms while the process was past its
    // allowance with memory that was not the run's.
    const governor = createMemoryGovernor(1024, 100 * MB, () => 0);
    const verdict = governor.poll(900 * MB, [{ name: 'light', memoryMb: 32, cpuNs: 0.14 * ms }]);
    expect(verdict.end).toEqual([]);
    expect(verdict.spared.map((r) => r.name)).toEqual(['light']);
  });

  it('does not blame the next runs for what a run that just ended still holds, however it ended', () => {
    // A run ended by isolated-vm's own limit left 800 MB mapped for a moment; the neighbour that
    // runs in the next poll has nothing to do with it.
    let t = 0;
    const governor = createMemoryGovernor(1024, 100 * MB, () => t);
    const neighbour = { name: 'neighbour', memoryMb: 32, cpuNs: 5 * ms };
    governor.ended(900 * MB);
    t = 10;
    expect(governor.poll(900 * MB, [neighbour]).end).toEqual([]);
    // Once the memory had its time to be given back, holding it is somebody's again.
    t = 10 + DRAIN_MS;
    expect(governor.poll(900 * MB, [neighbour]).end.map((r) => r.name)).toEqual(['neighbour']);
  });

  it('blames every run that ran comparably, and nobody while the worker stays within its allowance', () => {
    const governor = createMemoryGovernor(1024, 100 * MB, () => 0);
    const runs = [
      { name: 'a', memoryMb: 32, cpuNs: 40 * ms },
      { name: 'b', memoryMb: 32, cpuNs: 30 * ms },
      { name: 'idle', memoryMb: 32, cpuNs: 0 },
    ];
    expect(governor.poll(120 * MB, runs).end).toEqual([]);
    const verdict = governor.poll(900 * MB, runs);
    expect(verdict.end.map((r) => r.name)).toEqual(['a', 'b']);
    expect(verdict.spared).toEqual([]);
  });
});

describe("a worker's concurrency is sized by its memory", () => {
  it('runs beyond what fits wait in the queue instead of sharing the worker', async () => {
    const fit = runsPerWorker(600, 32);
    let inFlight = 0;
    let most = 0;
    // Every call waits until as many runs as fit are waiting at once (or 3 s): the rest must queue.
    let open = (): void => undefined;
    const full = new Promise<void>((resolve) => (open = resolve));
    setTimeout(open, 3_000);
    const onCall = async (name: string, args: JsonValue) => {
      most = Math.max(most, ++inFlight);
      if (inFlight >= fit) open();
      await full;
      await sleep(20);
      inFlight--;
      return { name, args };
    };
    const outcomes = await Promise.all(
      Array.from({ length: fit + 3 }, (_, i) =>
        run({ code: `return (await tools.echo({ i: ${i} })).args.i`, onCall }),
      ),
    );
    expect(outcomes.map(value)).toEqual(Array.from({ length: fit + 3 }, (_, i) => i));
    expect(most).toBe(fit);
  });
});
