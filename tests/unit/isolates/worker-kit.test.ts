// The isolate workers' poll (CPU budgets and memory): every pollMs while an isolate is live, slower
// while the worker is idle, and back to every pollMs from the moment a run wakes it, so an idle
// worker's slow poll never delays the budgets of a run that starts.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { pollSchedule } from '../../../host/isolates/worker-kit.ts';

describe('the workers’ poll schedule', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  const start = () => {
    const live = new Set<number>();
    const polls: number[] = [];
    let woken = 0;
    const upkeep = pollSchedule(20, 200, () => live.values(), {
      poll: () => void polls.push(Date.now()),
      woken: () => void woken++,
    });
    return { live, polls, upkeep, woken: () => woken };
  };

  it('polls every pollMs while a run is live, and every idlePollMs once none is', () => {
    const { live, polls } = start();
    const t0 = Date.now();
    live.add(1);
    vi.advanceTimersByTime(100);
    expect(polls.map((t) => t - t0)).toEqual([20, 40, 60, 80, 100]);
    live.delete(1);
    polls.length = 0;
    vi.advanceTimersByTime(1000);
    // The poll that finds it gone (still due at pollMs), then the idle pace.
    expect(polls.map((t) => t - t0)).toEqual([120, 320, 520, 720, 920]);
  });

  it('a run that starts on an idle worker is polled within pollMs of its start, not at the idle pace', () => {
    const { live, polls, upkeep, woken } = start();
    vi.advanceTimersByTime(50); // idle from the first poll on (at 20 ms)
    const t0 = Date.now();
    live.add(7);
    upkeep.wake();
    expect(woken()).toBe(1);
    polls.length = 0;
    vi.advanceTimersByTime(60);
    expect(polls.map((t) => t - t0)).toEqual([20, 40, 60]);
    upkeep.wake(); // already awake: nothing changes
    expect(woken()).toBe(1);
  });
});
