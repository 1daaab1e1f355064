// Coalesces the IPC messages one side produces in a tick into one frame: every frame is a write
// syscall and a wake-up of the other process, which on a busy machine costs far more than the
// message itself. `post` queues and flushes at the end of the tick (`defer`, setImmediate by
// default: the check phase of the same loop iteration, so no timer delay); `send` flushes at once,
// after what is queued, keeping order.
// Invariant: messages leave in the order they were posted or sent; a frame of one is sent as-is.

export interface Outbox<M> {
  /** Queue a message for the end of this tick. */
  post(message: M): void;
  /** Send what is queued plus `message` now; false when the channel refused it. */
  send(message: M): boolean;
  /** Send what is queued now. */
  flush(): boolean;
  /** Drop what is queued (the channel is gone). */
  clear(): void;
}

/**
 * @param defer when a posted message leaves. Default setImmediate. The host passes process.nextTick:
 * replies resolve in promise jobs, and a tick callback runs once every job has run, before the loop
 * moves on (so before any setImmediate work such as the event log's writes).
 */
export const createOutbox = <M>(
  write: (frame: M | { t: 'batch'; messages: M[] }) => boolean,
  defer: (callback: () => void) => unknown = setImmediate,
): Outbox<M> => {
  let queue: M[] = [];
  let scheduled = false;

  const flush = (): boolean => {
    scheduled = false;
    if (queue.length === 0) return true;
    const messages = queue;
    queue = [];
    return write(messages.length === 1 ? (messages[0] as M) : { t: 'batch', messages });
  };

  return {
    post(message) {
      queue.push(message);
      if (!scheduled) {
        scheduled = true;
        defer(flush);
      }
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
