// Owners apart: a worker's memory is governed as a whole (a running isolate's heap cannot be read,
// memory.ts), so one tenant's memory attack could end another tenant's run that computes in the
// same worker. The host places a run on a worker that holds no other owner's runs where one can
// take it (placement.ts); a worker where a run ran out of memory retires (what it grew would be
// charged to the next run there); and where owners must share a worker, a run ended with others
// says that the memory may not have been its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IsolateHost, RunOutcome } from '../../../host/isolates/index.ts';
import { BLOAT_MB, createMemoryWatch, type Governed } from '../../../host/isolates/memory.ts';
import { until } from '../../helpers/until.ts';
import { echo, failure, runner, startHost, value } from './helpers.ts';

const limits = { wallMs: 40_000, cpuMs: 20_000, memoryMb: 32 };
const ATTACK = 'new Array(2 ** 31).fill(0); return 1';
/** Pure computation: no allocation to speak of, several hundred ms of CPU. */
const COMPUTE =
  'await tools.echo({ start: true }); let x = 0; for (let i = 0; i < 3e8; i++) x = (x + i) % 1000003; return x';

/** Starts the computing run of tenant B, waits until it runs, then the attack of tenant A beside it. */
const attackBeside = async (host: IsolateHost): Promise<[RunOutcome, RunOutcome]> => {
  const run = runner(() => host);
  let started = (): void => undefined;
  const running = new Promise<void>((resolve) => (started = resolve));
  const busy = run({
    code: COMPUTE,
    owner: 'tenant-b',
    onCall: async (name, args) => {
      started();
      return echo(name, args);
    },
  });
  await running;
  const attack = run({ code: ATTACK, owner: 'tenant-a' });
  return Promise.all([attack, busy]);
};

describe('with a worker free of other owners', () => {
  let host: IsolateHost;
  beforeAll(async () => {
    host = await startHost({ workers: 2, inline: false, workerRssMb: 600, limits });
    await until(() => host.readyWorkers() === 2, { what: 'both workers ready', timeoutMs: 30_000 });
  }, 60_000);
  afterAll(() => host.close());

  it("another tenant's memory attack does not end a program computing beside it", async () => {
    for (let round = 0; round < 3; round++) {
      await until(() => host.readyWorkers() === 2, { what: 'both workers ready', timeoutMs: 30_000 });
      const [attack, busy] = await attackBeside(host);
      expect(['memory', 'crash']).toContain(failure(attack).kind);
      expect(typeof value(busy)).toBe('number');
    }
  }, 180_000);
});

describe('when owners must share a worker', () => {
  it('runs ended together are told the memory may not have been their own; one ended alone is not', () => {
    const MB = 1024 * 1024;
    let rss = 100 * MB;
    const watch = createMemoryWatch(1024, () => rss);
    const ended: Array<[number, boolean]> = [];
    const item = (id: number, cpuNs: number): Governed => ({
      id,
      memoryMb: 32,
      check: () => cpuNs,
      outOfMemory: (beside) => ended.push([id, beside]),
      heapBytes: async () => 1 * MB,
    });
    watch([item(1, 50e6), item(2, 40e6)]);
    expect(ended).toEqual([]);
    rss = 900 * MB;
    watch([item(1, 50e6), item(2, 40e6)]);
    expect(ended).toEqual([
      [1, true],
      [2, true],
    ]);
    rss = 100 * MB;
    const alone = createMemoryWatch(1024, () => rss);
    alone([item(3, 50e6)]);
    rss = 900 * MB;
    alone([item(3, 50e6)]);
    expect(ended.at(-1)).toEqual([3, false]);
  });
});

describe('a worker that stays bloated when quiet', () => {
  it('asks once to be replaced, and not while runs are live', () => {
    const MB = 1024 * 1024;
    let rss = 100 * MB;
    let asked = 0;
    const watch = createMemoryWatch(
      1024,
      () => rss,
      () => asked++,
    );
    const live: Governed = {
      id: 1,
      memoryMb: 32,
      check: () => 0,
      outOfMemory: () => undefined,
      heapBytes: async () => 1 * MB,
    };
    rss = 100 * MB + (BLOAT_MB + 10) * MB;
    watch([live]);
    expect(asked).toBe(0);
    watch([]); // the run just went: its memory is still being given back
    rss = 100 * MB + (BLOAT_MB - 10) * MB;
    watch([]);
    expect(asked).toBe(0);
    rss = 100 * MB + (BLOAT_MB + 10) * MB;
    watch([]);
    watch([]);
    expect(asked).toBe(1);
  });
});
