// The kernel's CPU latency device as the idle-poll tests read it (tests/unit/idle-poll.test.ts,
// tests/unit/sandbox/node-idle-poll.test.ts): the target every request together asks for now, and
// a recording double of a request that lets a test wait for a write (no sleeps).
import { closeSync, openSync, readSync } from 'node:fs';
import { CPU_LATENCY_DEVICE, type LatencyRequest } from '../../host/idle-poll.ts';

/** The kernel's current CPU latency target in µs; undefined where the device cannot be read. */
export const currentTarget = (): number | undefined => {
  let fd: number;
  try {
    fd = openSync(CPU_LATENCY_DEVICE, 'r');
  } catch {
    return undefined;
  }
  try {
    const buffer = Buffer.alloc(4);
    readSync(fd, buffer, 0, 4, null);
    return buffer.readInt32LE(0);
  } finally {
    closeSync(fd);
  }
};

/**
 * A latency request that records what was written to it. `written(us, from)` settles once `us` is
 * among the writes from index `from` on (default: the writes to come), whenever it was written.
 */
export const recordingDevice = () => {
  const writes: number[] = [];
  const waiting: Array<{ us: number; from: number; resolve: () => void }> = [];
  let opened = 0;
  let closed = 0;
  const settle = (): void => {
    for (const w of waiting.splice(0)) {
      if (writes.indexOf(w.us, w.from) >= 0) w.resolve();
      else waiting.push(w);
    }
  };
  const open = (): LatencyRequest => {
    opened++;
    return {
      write: (us) => {
        writes.push(us);
        settle();
      },
      close: () => void closed++,
    };
  };
  return {
    writes,
    open,
    written: (us: number, from = writes.length): Promise<void> =>
      new Promise((resolve) => {
        waiting.push({ us, from, resolve });
        settle();
      }),
    get opened() {
      return opened;
    },
    get closed() {
      return closed;
    },
  };
};
