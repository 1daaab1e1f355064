// Coalesces the IPC messages one side produces in a tick into one frame: every frame is a write
// syscall and a wake-up of the other process, which on a busy machine costs far more than the
// message itself. `post` queues and flushes at the next setImmediate (the check phase of the same
// loop iteration, so no timer delay); `send` flushes at once, after what is queued, keeping order.
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

export const createOutbox = <M>(write: (frame: M | { t: 'batch'; messages: M[] }) => boolean): Outbox<M> => {
  let queue: M[] = [];
  let scheduled: NodeJS.Immediate | undefined;

  const flush = (): boolean => {
    if (scheduled !== undefined) {
      clearImmediate(scheduled);
      scheduled = undefined;
    }
    if (queue.length === 0) return true;
    const messages = queue;
    queue = [];
    return write(messages.length === 1 ? (messages[0] as M) : { t: 'batch', messages });
  };

  return {
    post(message) {
      queue.push(message);
      scheduled ??= setImmediate(flush);
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
