// The fair scheduler (host/api/fair.ts) on a simulated event loop: `defer` queues callbacks that
// checkPhase() runs the way Node runs a check phase (only those queued before it began, microtasks
// drained after each), and a fake clock stands for the main-thread time a granted slice uses.
import { spawn } from 'node:child_process';
import { getPriority } from 'node:os';
import { describe, expect, it } from 'vitest';
import { createFairScheduler, takingTurns, yieldingWorkers } from '../../../host/api/fair.ts';
import { DEFAULT_LIMITS, type IsolateHost, type RunOutcome } from '../../../host/isolates/types.ts';

const flushMicrotasks = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

const loop = (budgetMs: number) => {
  let clock = 0;
  let deferred: (() => void)[] = [];
  const scheduler = createFairScheduler({
    budgetMs,
    now: () => clock,
    defer: (fn) => void deferred.push(fn),
  });
  return {
    scheduler,
    /** Main-thread time spent by whatever runs now. */
    work: (ms: number) => {
      clock += ms;
    },
    async checkPhase(): Promise<void> {
      const phase = deferred;
      deferred = [];
      for (const fn of phase) {
        fn();
        await flushMicrotasks();
      }
    },
    pending: () => deferred.length,
  };
};

describe('fair scheduler', () => {
  it('lets heavy work go at once while the turn lasts and nobody waits', async () => {
    const l = loop(5);
    const order: string[] = [];
    for (const name of ['a', 'b', 'c']) {
      void l.scheduler.turn('t1').then(() => order.push(name));
      l.work(1);
    }
    await flushMicrotasks();
    expect(order).toEqual(['a', 'b', 'c']);
    expect(l.scheduler.waiting()).toBe(0);
  });

  it('queues work past the budget for a later check phase and grants it in FIFO order per key', async () => {
    const l = loop(5);
    const order: number[] = [];
    for (let i = 0; i < 8; i++) {
      void l.scheduler.turn('t1').then(() => {
        order.push(i);
        l.work(2); // each slice costs 2 ms of the turn
      });
      await flushMicrotasks();
    }
    // A grant needs budget left before it: 0, 1, 2 began at 0, 2 and 4 ms; at 6 ms the rest wait.
    expect(order).toEqual([0, 1, 2]);
    expect(l.scheduler.waiting()).toBe(5);
    await l.checkPhase();
    // A fresh turn in the check phase, the same budget.
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    await l.checkPhase();
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(l.scheduler.waiting()).toBe(0);
  });

  it('serves waiting tenants in round robin: a burst of one tenant does not starve another', async () => {
    const l = loop(1);
    const order: string[] = [];
    l.work(0);
    void l.scheduler.turn('busy').then(() => order.push('busy-first'));
    l.work(1); // the turn is spent
    for (let i = 0; i < 5; i++) void l.scheduler.turn('busy').then(() => order.push(`busy${i}`));
    void l.scheduler.turn('quiet').then(() => order.push('quiet'));
    void l.scheduler.turn('other').then(() => order.push('other'));
    await flushMicrotasks();
    expect(order).toEqual(['busy-first']);
    // Each slice spends the whole budget: one grant per check phase.
    for (let i = 0; i < 7; i++) {
      await l.checkPhase();
      l.work(1);
    }
    expect(order).toEqual(['busy-first', 'busy0', 'quiet', 'other', 'busy1', 'busy2', 'busy3', 'busy4']);
  });

  it('grants at least one waiter per check phase even when every slice overruns the budget', async () => {
    const l = loop(5);
    let granted = 0;
    l.work(0);
    void l.scheduler.turn('t').then(() => l.work(50));
    await flushMicrotasks();
    for (let i = 0; i < 20; i++)
      void l.scheduler.turn('t').then(() => {
        granted++;
        l.work(50);
      });
    for (let phase = 1; phase <= 20; phase++) {
      await l.checkPhase();
      expect(granted).toBe(phase);
    }
    expect(l.scheduler.waiting()).toBe(0);
  });

  it('keeps no more drain callbacks queued than it needs', async () => {
    const l = loop(1);
    l.work(0);
    void l.scheduler.turn('t');
    l.work(1);
    for (let i = 0; i < 1000; i++) void l.scheduler.turn(`tenant${i % 10}`);
    // closeTurn plus at most 32 drains, however many wait.
    expect(l.pending()).toBeLessThanOrEqual(33);
    let phases = 0;
    while (l.scheduler.waiting() > 0 && phases < 5000) {
      await l.checkPhase();
      l.work(1);
      phases++;
    }
    expect(l.scheduler.waiting()).toBe(0);
    await l.checkPhase();
    await l.checkPhase();
    expect(l.pending()).toBe(0);
  });

  it('run() returns what the work returns and propagates its error, and the queue goes on', async () => {
    const l = loop(1);
    l.work(0);
    await l.scheduler.turn('t');
    l.work(1);
    const ok = l.scheduler.run('t', () => 42);
    const sync = l.scheduler.run('t', () => {
      throw new Error('sync boom');
    });
    const async = l.scheduler.run('u', async () => {
      throw new Error('async boom');
    });
    const after = l.scheduler.run('t', () => 'after');
    for (let i = 0; i < 4; i++) await l.checkPhase();
    await expect(ok).resolves.toBe(42);
    await expect(sync).rejects.toThrow('sync boom');
    await expect(async).rejects.toThrow('async boom');
    await expect(after).resolves.toBe('after');
  });

  it('is off with a budget of 0: every turn at once, nothing deferred', async () => {
    const l = loop(0);
    const order: number[] = [];
    for (let i = 0; i < 5; i++) {
      void l.scheduler.turn('t').then(() => order.push(i));
      l.work(100);
    }
    await flushMicrotasks();
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(l.pending()).toBe(0);
  });

  it('works on the real event loop: waiters past the budget are all granted', async () => {
    const scheduler = createFairScheduler({ budgetMs: 0.001 });
    const done: string[] = [];
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        scheduler.turn(`t${i % 3}`).then(() => {
          const until = performance.now() + 0.01;
          while (performance.now() < until);
          done.push(`t${i % 3}`);
        }),
      ),
    );
    expect(done).toHaveLength(50);
    expect(scheduler.waiting()).toBe(0);
  });
});

const okOutcome = (value: number, calls: number): RunOutcome => ({
  ok: true,
  value,
  logs: [],
  stats: { calls, maxInFlight: calls, wallMs: 1, inline: false },
});

/** A scheduler whose every turn is held until the test releases it, in the order asked. */
const heldTurns = () => {
  const asked: string[] = [];
  const releases: (() => void)[] = [];
  const fair = {
    turn: (key: string) => {
      asked.push(key);
      return new Promise<void>((resolve) => void releases.push(resolve));
    },
    run: async <T>(_key: string, fn: () => T | Promise<T>) => fn(),
    waiting: () => 0,
  };
  return { asked, release: () => releases.shift()?.(), fair };
};

describe('takingTurns', () => {
  it("gives a program's outcome back only in its owner's turn, unchanged", async () => {
    const { asked, release, fair } = heldTurns();
    const outcome = okOutcome(1, 0);
    const isolates: IsolateHost = {
      run: async () => outcome,
      limits: DEFAULT_LIMITS,
      workerPids: () => [7],
      readyWorkers: () => 1,
      close: async () => undefined,
    };
    const taking = takingTurns(isolates, fair);
    let settled: RunOutcome | undefined;
    const request = { code: 'return 1', bindings: [], onCall: async () => null, owner: 'tenant-1' };
    const run = taking.run(request).then((o) => {
      settled = o;
    });
    await flushMicrotasks();
    expect(asked).toEqual(['tenant-1']);
    expect(settled).toBeUndefined();
    release();
    await run;
    expect(settled).toBe(outcome);
    expect(taking.workerPids()).toEqual([7]);
    expect(taking.limits).toBe(isolates.limits);
  });
});

describe('takingTurns: tool calls', () => {
  it("runs each of a program's tool calls only in its owner's turn, with what the program gave", async () => {
    const { asked, release, fair } = heldTurns();
    const handled: unknown[] = [];
    const outcome = okOutcome(2, 1);
    const isolates: IsolateHost = {
      // The host hands the program's call to the request's onCall, as a worker's call would be.
      run: async (request) => {
        const signal = new AbortController().signal;
        expect(await request.onCall('tools.add', [1, 1], signal)).toBe(2);
        return outcome;
      },
      limits: DEFAULT_LIMITS,
      workerPids: () => [],
      readyWorkers: () => 0,
      close: async () => undefined,
    };
    const request = {
      code: 'return await tools.add(1, 1)',
      bindings: [],
      owner: 'tenant-2',
      onCall: async (name: string, args: unknown) => {
        handled.push([name, args]);
        return 2;
      },
    };
    const run = takingTurns(isolates, fair).run(request);
    await flushMicrotasks();
    // The call waits for its turn: the pipeline has not seen it yet.
    expect(asked).toEqual(['tenant-2']);
    expect(handled).toEqual([]);
    release();
    await flushMicrotasks();
    expect(handled).toEqual([['tools.add', [1, 1]]]);
    // Then the outcome waits for its own turn.
    expect(asked).toEqual(['tenant-2', 'tenant-2']);
    release();
    expect(await run).toBe(outcome);
  });
});

describe('yieldingWorkers', () => {
  it('lowers each started isolate worker to the niceness given, and only that', () => {
    const set: [number, number][] = [];
    const hook = yieldingWorkers(10, (pid, nice) => void set.push([pid, nice]));
    hook({ type: 'worker_started', worker: 0, pid: 101 });
    hook({ type: 'worker_exited', worker: 0, pid: 101, code: 1, signal: null, stderr: '' });
    hook({ type: 'worker_started', worker: 0, pid: 102 });
    expect(set).toEqual([
      [101, 10],
      [102, 10],
    ]);
  });

  it('leaves the workers alone at 0 and ignores a worker gone before its niceness was set', () => {
    const set: number[] = [];
    yieldingWorkers(0, (pid) => void set.push(pid))({ type: 'worker_started', worker: 0, pid: 101 });
    expect(set).toEqual([]);
    const gone = yieldingWorkers(10, () => {
      throw Object.assign(new Error('no such process'), { code: 'ESRCH' });
    });
    expect(() => gone({ type: 'worker_started', worker: 1, pid: 103 })).not.toThrow();
  });

  it('really lowers a child process: the kernel reports its new niceness', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 5000)'], { stdio: 'ignore' });
    try {
      const pid = child.pid as number;
      yieldingWorkers(19)({ type: 'worker_started', worker: 0, pid });
      expect(getPriority(pid)).toBe(19);
    } finally {
      child.kill();
    }
  });
});
