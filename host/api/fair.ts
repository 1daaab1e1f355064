// Request-level fairness on the control plane's one event loop. Node reads every socket that became
// readable in one poll phase and runs each one's handler, with its whole microtask chain, before
// it reads the next; a burst of expensive requests (call batches, and their results coming back)
// therefore made a cheap one (GET of an agent, health) arriving behind it wait for all of them.
// Heavy requests ask for a turn (`turn(key)`) before each expensive phase; light ones never ask.
// A turn lasts `budgetMs` of main-thread time: while it lasts and nobody waits, a request goes on at
// once; past it, requests wait in a queue per key (the tenant) and are let go in later check phases
// (setImmediate), one per key in round robin, as long as that check phase's own budget lasts. The
// poll phase between two check phases reads the sockets that became readable meanwhile, so a light
// request waits for at most one budget of heavy work (plus what its own poll phase holds).
// Invariants: every waiter is granted exactly once, in FIFO order within its key, and no key gets
// a second grant while another key waits (round robin); each check phase with waiters grants at
// least one of them (no starvation, even when one slice overruns the whole budget); a grant is
// only ever a resolved promise (nothing here rejects, nothing is dropped). budgetMs 0 turns it off.
import { setPriority } from 'node:os';
import type { IsolateHost, IsolateHostEvent } from '../isolates/types.ts';

export interface FairScheduler {
  /**
   * Resolves when the caller (keyed by `key`, its tenant) may run its next phase of heavy work:
   * at once while this turn's budget lasts and nobody waits, else in a later check phase.
   */
  turn(key: string): Promise<void>;
  /** `fn` in the key's turn; its result or error is the returned promise's. */
  run<T>(key: string, fn: () => T | Promise<T>): Promise<T>;
  /** Requests waiting for a turn now. */
  waiting(): number;
}

export interface FairOptions {
  /** Main-thread time a turn may use before heavy requests wait; 0 turns the scheduler off. */
  budgetMs: number;
  /** Default performance.now. */
  now?: () => number;
  /** Runs `fn` in the next check phase, after the poll phase. Default setImmediate. */
  defer?: (fn: () => void) => void;
  /** Drain callbacks queued at once (each grants at most one waiter). Default 32. */
  maxDrains?: number;
}

const GRANTED = Promise.resolve();

export const createFairScheduler = (options: FairOptions): FairScheduler => {
  const { budgetMs } = options;
  const now = options.now ?? (() => performance.now());
  const defer = options.defer ?? ((fn: () => void) => void setImmediate(fn));
  const maxDrains = options.maxDrains ?? 32;
  /** Waiters per key; the Map's order is the round robin's (a served key goes to the back). */
  const queues = new Map<string, (() => void)[]>();
  let waiting = 0;
  let drains = 0;
  /** When the current turn began; undefined between turns. */
  let turnStart: number | undefined;

  function closeTurn(): void {
    turnStart = undefined;
  }
  /** A turn ends at the next check phase: closeTurn is queued before any drain of this turn. */
  function openTurn(): void {
    if (turnStart !== undefined) return;
    turnStart = now();
    defer(closeTurn);
  }
  const spent = (): boolean => turnStart !== undefined && now() - turnStart >= budgetMs;

  function schedule(): void {
    drains++;
    defer(drain);
  }

  /** The first waiter of the first key in round-robin order; its key moves to the back. */
  function next(): (() => void) | undefined {
    for (const [key, queue] of queues) {
      const grant = queue.shift();
      queues.delete(key);
      if (queue.length > 0) queues.set(key, queue);
      if (grant !== undefined) {
        waiting--;
        return grant;
      }
    }
    return undefined;
  }

  function drain(): void {
    drains--;
    if (waiting === 0) return;
    // A fresh turn (closeTurn ran at this check phase's start) always grants one: no starvation.
    if (spent()) {
      schedule();
      return;
    }
    openTurn();
    next()?.();
    if (waiting > drains && drains < maxDrains) schedule();
  }

  function turn(key: string): Promise<void> {
    if (budgetMs <= 0) return GRANTED;
    if (waiting === 0 && !spent()) {
      openTurn();
      return GRANTED;
    }
    return new Promise<void>((resolve) => {
      let queue = queues.get(key);
      if (queue === undefined) {
        queue = [];
        queues.set(key, queue);
      }
      queue.push(resolve);
      waiting++;
      if (drains < Math.min(waiting, maxDrains)) schedule();
    });
  }

  return {
    turn,
    run: async (key, fn) => {
      await turn(key);
      return fn();
    },
    waiting: () => waiting,
  };
};

/**
 * The isolate host with a turn between a program's outcome and what is made of it (the pipeline's
 * results, the log, the answer), in its owner's (tenant's) queue: the workers' results of a burst
 * of programs come back together, and shaping them all at once held every light request up. So
 * does each tool call a program makes (the pipeline's work for it) before it runs: 200 programs
 * calling tools in a loop are as much main-thread work as 200 batches. When nobody waits and the
 * turn lasts, a call goes on at once (one resolved promise).
 */
export const takingTurns = (isolates: IsolateHost, fair: FairScheduler): IsolateHost => ({
  run: async (request) => {
    const owner = request.owner ?? '';
    const { onCall } = request;
    const outcome = await isolates.run({
      ...request,
      onCall: async (name, args, signal) => {
        await fair.turn(owner);
        return onCall(name, args, signal);
      },
    });
    await fair.turn(owner);
    return outcome;
  },
  get limits() {
    return isolates.limits;
  },
  workerPids: () => isolates.workerPids(),
  readyWorkers: () => isolates.readyWorkers(),
  close: () => isolates.close(),
});

/**
 * The isolate workers yield the cores to the control plane: each worker, once started, runs at
 * `nice` (Linux's CFS then gives the service's thread ~9× their weight at niceness 10, and a
 * worker woken by its IPC no longer preempts the thread that serves every request). A program's
 * CPU limit is CPU time, unchanged; on an idle core a worker runs as fast as before. Raising a
 * child's niceness needs no privilege; a worker already gone is ignored. 0: left as they are.
 */
export const yieldingWorkers =
  (nice: number, set: (pid: number, priority: number) => void = setPriority) =>
  (event: IsolateHostEvent): void => {
    if (nice <= 0 || event.type !== 'worker_started' || event.pid <= 0) return;
    try {
      set(event.pid, nice);
    } catch {
      // It exited meanwhile (ESRCH): its successor gets its own event.
    }
  };
