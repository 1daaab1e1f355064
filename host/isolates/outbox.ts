// Coalesces the IPC messages one side produces in a burst into few frames: every frame is a write
// syscall and a wake-up of the other process, which on a busy machine costs far more than the
// message itself. The first message `post`ed in a tick leaves at once (a lone call or reply must
// not wait: that is the sequential case); the ones posted after it in the same tick are queued and
// leave as one frame when the tick ends (`defer`). `send` flushes the queue plus its message now.
// Invariant: messages leave in the order they were posted or sent; a frame of one is sent as-is.

export interface Outbox<M> {
  /** Send now if it is the first of this tick, else queue it for the tick's end. */
  post(message: M): void;
  /** Queue it for the next `send`, or for the tick's end: never a frame of its own at once. */
  queue(message: M): void;
  /** Send what is queued plus `message` now; false when the channel refused it. */
  send(message: M): boolean;
  /** Send what is queued now. */
  flush(): boolean;
  /** Drop what is queued (the channel is gone). */
  clear(): void;
}

/**
 * @param defer when the queued rest of a burst leaves. Default setImmediate (the check phase of the
 * same loop iteration: no timer delay). The host passes process.nextTick: replies resolve in promise
 * jobs, and a tick callback runs once every job has run, before the loop moves on.
 */
export const createOutbox = <M>(
  write: (frame: M | { t: 'batch'; messages: M[] }) => boolean,
  defer: (callback: () => void) => unknown = setImmediate,
): Outbox<M> => {
  let queue: M[] = [];
  let burst = false; // a message already left in this tick: later ones wait for its end

  const flush = (): boolean => {
    if (queue.length === 0) return true;
    const messages = queue;
    queue = [];
    return write(messages.length === 1 ? (messages[0] as M) : { t: 'batch', messages });
  };
  const endBurst = (): void => {
    burst = false;
    flush();
  };

  return {
    post(message) {
      if (burst) return void queue.push(message);
      burst = true;
      defer(endBurst);
      write(message);
    },
    queue(message) {
      queue.push(message);
      if (burst) return;
      burst = true;
      defer(endBurst);
    },
    send(message) {
      queue.push(message);
      return flush();
    },
    flush,
    clear() {
      queue = [];
    },
  };
};
