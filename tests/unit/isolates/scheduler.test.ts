import { describe, expect, it } from 'vitest';
import { createCallScheduler } from '../../../host/isolates/scheduler.ts';

const deferred = () => {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('call scheduler', () => {
  it('overlaps safe calls, runs an exclusive call alone, and keeps the order across it', async () => {
    const scheduler = createCallScheduler(4);
    const log: string[] = [];
    const gates = Array.from({ length: 4 }, deferred);
    const task = (name: string, i: number) => async () => {
      log.push(`start ${name}`);
      await gates[i]!.promise;
      log.push(`end ${name}`);
    };
    scheduler.submit(true, task('r1', 0));
    scheduler.submit(true, task('r2', 1));
    scheduler.submit(false, task('w', 2));
    scheduler.submit(true, task('r3', 3));
    expect(log).toEqual(['start r1', 'start r2']);
    gates[1]!.resolve();
    await new Promise((r) => setTimeout(r, 5));
    expect(log).toEqual(['start r1', 'start r2', 'end r2']);
    gates[0]!.resolve();
    await new Promise((r) => setTimeout(r, 5));
    expect(log.slice(3)).toEqual(['end r1', 'start w']);
    gates[2]!.resolve();
    gates[3]!.resolve();
    await new Promise((r) => setTimeout(r, 5));
    expect(log.slice(5)).toEqual(['end w', 'start r3', 'end r3']);
    expect(scheduler.maxObserved).toBe(2);
  });

  it('never runs more safe calls at once than its limit', async () => {
    const scheduler = createCallScheduler(3);
    let running = 0;
    let peak = 0;
    const done: Promise<void>[] = [];
    for (let i = 0; i < 10; i++) {
      const d = deferred();
      done.push(d.promise);
      scheduler.submit(true, async () => {
        peak = Math.max(peak, ++running);
        await new Promise((r) => setTimeout(r, 2));
        running--;
        d.resolve();
      });
    }
    await Promise.all(done);
    expect(peak).toBe(3);
  });
});
