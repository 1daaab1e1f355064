// The CPU meter shares what a worker process's isolate threads really used among the isolates
// entered since the last poll, by their entered time, never charging one more than that time.
import { describe, expect, it } from 'vitest';
import { createCpuMeter, type Metered } from '../../../host/isolates/cpu.ts';

/** A fake process clock (µs) and isolates that report entered time (ns). */
const rig = () => {
  const clock = { all: 0, loop: 0 };
  const meter = createCpuMeter(() => ({ ...clock }));
  const isolate = () => {
    const item = { entered: 0, charged: [] as number[] };
    const metered: Metered = {
      sample: () => {
        const ns = item.entered;
        item.entered = 0;
        return ns;
      },
      charge: (ns) => void item.charged.push(ns),
    };
    return { item, metered };
  };
  return { clock, meter, isolate };
};

describe('createCpuMeter', () => {
  it('charges an entry that waited for a core only the CPU it got', () => {
    const { clock, meter, isolate } = rig();
    const a = isolate();
    // 100 ms entered, 25 ms of CPU on the isolate threads, 5 ms on the event loop.
    a.item.entered = 100e6;
    clock.all += 30_000;
    clock.loop += 5_000;
    meter([a.metered]);
    expect(a.item.charged).toEqual([25e6]);
  });

  it('never charges more than the time entered, and nothing to an isolate not entered', () => {
    const { clock, meter, isolate } = rig();
    const a = isolate();
    const b = isolate();
    a.item.entered = 10e6;
    clock.all += 50_000; // helper threads (GC, compilation) worked too
    meter([a.metered, b.metered]);
    expect(a.item.charged).toEqual([10e6]);
    expect(b.item.charged).toEqual([0]);
  });

  it('shares the CPU of several isolates entered at once by their entered time', () => {
    const { clock, meter, isolate } = rig();
    const a = isolate();
    const b = isolate();
    a.item.entered = 60e6;
    b.item.entered = 20e6;
    clock.all += 40_000;
    meter([a.metered, b.metered]);
    expect(a.item.charged).toEqual([30e6]);
    expect(b.item.charged).toEqual([10e6]);
  });
});
