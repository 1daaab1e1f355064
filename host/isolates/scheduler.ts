// Per-run ordering of the calls a program makes: calls start in the order the program made them;
// consecutive concurrency-safe calls overlap up to `maxInFlight`; an exclusive call waits until
// everything before it has settled and runs alone, and everything after it waits for it.
// Invariant: `inFlight` counts started, unsettled tasks; an exclusive task only starts at 0.

export interface CallScheduler {
  /** Queue a task; `task` is started when the ordering rules allow and its settlement frees the slot. */
  submit(safe: boolean, task: () => Promise<void>): void;
  /** Highest number of tasks that were running at once. */
  readonly maxObserved: number;
  /** Drop queued (unstarted) tasks; running ones settle on their own. */
  clear(): void;
}

export const createCallScheduler = (maxInFlight: number): CallScheduler => {
  const queue: Array<{ safe: boolean; task: () => Promise<void> }> = [];
  let inFlight = 0;
  let exclusiveRunning = false;
  let maxObserved = 0;

  const pump = (): void => {
    while (queue.length > 0 && !exclusiveRunning) {
      const head = queue[0]!;
      if (head.safe ? inFlight >= maxInFlight : inFlight > 0) return;
      queue.shift();
      inFlight++;
      if (!head.safe) exclusiveRunning = true;
      maxObserved = Math.max(maxObserved, inFlight);
      void head
        .task()
        .catch(() => undefined)
        .finally(() => {
          inFlight--;
          if (!head.safe) exclusiveRunning = false;
          pump();
        });
    }
  };

  return {
    submit: (safe, task) => {
      queue.push({ safe, task });
      pump();
    },
    get maxObserved() {
      return maxObserved;
    },
    clear: () => void queue.splice(0),
  };
};
