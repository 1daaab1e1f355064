// The one concurrency gate: behind the batch scheduler and behind a program's inner calls (the
// isolate host only brokers those, exec.callTool schedules them here). Tasks start in the
// order they were submitted (FIFO); consecutive concurrency-safe tasks share a pool of `limit`
// slots; an exclusive task waits until the pool drains, runs alone, and holds back everything
// submitted after it. A task never starts before an earlier-submitted one.

interface Waiting {
  safe: boolean;
  start: () => void;
}

export interface Gate {
  run<T>(safe: boolean, task: () => Promise<T>): Promise<T>;
}

export const createGate = (limit: number): Gate => {
  let active = 0;
  let exclusive = false;
  const queue: Waiting[] = [];
  let head = 0;

  const canStart = (safe: boolean): boolean => (safe ? !exclusive && active < limit : active === 0);

  const pump = (): void => {
    while (head < queue.length) {
      const next = queue[head] as Waiting;
      if (!canStart(next.safe)) return;
      queue[head++] = undefined as never;
      next.start();
    }
    queue.length = 0;
    head = 0;
  };

  const launch = <T>(safe: boolean, task: () => Promise<T>): Promise<T> => {
    active++;
    if (!safe) exclusive = true;
    const done = (): void => {
      active--;
      if (!safe) exclusive = false;
      pump();
    };
    let promise: Promise<T>;
    try {
      promise = task();
    } catch (error) {
      promise = Promise.reject(error);
    }
    promise.then(done, done);
    return promise;
  };

  return {
    run(safe, task) {
      if (head === queue.length && canStart(safe)) return launch(safe, task);
      return new Promise((resolve, reject) => {
        queue.push({ safe, start: () => launch(safe, task).then(resolve, reject) });
      });
    },
  };
};
