// The one concurrency gate, for root batches and a program's inner calls alike: safe tasks overlap up
// to the limit, an exclusive task runs alone, and nothing starts before an earlier-submitted task.
import { describe, expect, it } from 'vitest';
import { createGate } from '../../../host/tools/gate.ts';

const deferred = () => {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};
/** Lets every settled task's continuation (and the gate's pump after it) run. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('concurrency gate', () => {
  it('overlaps safe tasks, runs an exclusive task alone, and keeps the order across it', async () => {
    const gate = createGate(4);
    const log: string[] = [];
    const gates = Array.from({ length: 4 }, deferred);
    const task = (name: string, i: number) => async () => {
      log.push(`start ${name}`);
      await gates[i]!.promise;
      log.push(`end ${name}`);
    };
    const done = [
      gate.run(true, task('r1', 0)),
      gate.run(true, task('r2', 1)),
      gate.run(false, task('w', 2)),
      gate.run(true, task('r3', 3)),
    ];
    expect(log).toEqual(['start r1', 'start r2']);
    gates[1]!.resolve();
    await turn();
    expect(log).toEqual(['start r1', 'start r2', 'end r2']);
    gates[0]!.resolve();
    await turn();
    expect(log.slice(3)).toEqual(['end r1', 'start w']);
    gates[2]!.resolve();
    gates[3]!.resolve();
    await Promise.all(done);
    expect(log.slice(5)).toEqual(['end w', 'start r3', 'end r3']);
  });

  it('never runs more safe tasks at once than its limit, and starts them in submission order', async () => {
    const gate = createGate(3);
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const done: Promise<void>[] = [];
    for (let i = 0; i < 10; i++) {
      done.push(
        gate.run(true, async () => {
          started.push(i);
          peak = Math.max(peak, ++running);
          await turn();
          running--;
        }),
      );
    }
    await Promise.all(done);
    expect(peak).toBe(3);
    expect(started).toEqual(Array.from({ length: 10 }, (_, i) => i));
  });
});
