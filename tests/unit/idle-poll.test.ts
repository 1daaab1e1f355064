import { closeSync as closeFd, openSync, readSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import {
  CPU_LATENCY_DEVICE,
  createIdlePoll,
  type LatencyRequest,
  NO_CONSTRAINT_US,
  openCpuLatency,
} from '../../host/idle-poll.ts';

/** A latency request that records what was written to it. */
const recording = () => {
  const writes: number[] = [];
  let opened = 0;
  let closed = 0;
  const open = (): LatencyRequest => {
    opened++;
    return { write: (us) => void writes.push(us), close: () => void closed++ };
  };
  return {
    writes,
    open,
    get opened() {
      return opened;
    },
    get closed() {
      return closed;
    },
  };
};

describe('idle polling while busy', () => {
  it('asks for 0 µs when the first thing starts and lifts it once the last has ended and the linger passed', () => {
    vi.useFakeTimers();
    try {
      const device = recording();
      const poll = createIdlePoll({ enabled: true, lingerMs: 10, open: device.open });
      expect(poll.state).toBe('idle');
      expect(device.opened).toBe(0); // nothing is opened before it is needed
      poll.enter();
      poll.enter();
      expect(poll.state).toBe('polling');
      expect(device.writes).toEqual([0]); // one request for both
      poll.leave();
      vi.advanceTimersByTime(50);
      expect(poll.state).toBe('polling'); // one still in flight
      poll.leave();
      vi.advanceTimersByTime(9);
      expect(poll.state).toBe('polling'); // the linger
      vi.advanceTimersByTime(2);
      expect(poll.state).toBe('idle');
      expect(device.writes).toEqual([0, NO_CONSTRAINT_US]);
      poll.enter();
      expect(device.writes).toEqual([0, NO_CONSTRAINT_US, 0]);
      expect(device.opened).toBe(1); // the same request, updated
      poll.leave();
      poll.close();
      expect(device.closed).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a call that starts within the linger keeps polling without a write', () => {
    vi.useFakeTimers();
    try {
      const device = recording();
      const poll = createIdlePoll({ enabled: true, lingerMs: 10, open: device.open });
      for (let i = 0; i < 100; i++) {
        poll.enter();
        poll.leave();
        vi.advanceTimersByTime(5);
      }
      expect(device.writes).toEqual([0]);
      vi.advanceTimersByTime(11);
      expect(device.writes).toEqual([0, NO_CONSTRAINT_US]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('off writes nothing; a device that cannot be opened or written turns it off for good, quietly', async () => {
    const device = recording();
    const off = createIdlePoll({ enabled: false, lingerMs: 10, open: device.open });
    off.enter();
    off.leave();
    expect(off.state).toBe('off');
    expect(device.opened).toBe(0);

    let tries = 0;
    const missing = createIdlePoll({
      enabled: true,
      lingerMs: 0,
      open: () => {
        tries++;
        return undefined;
      },
    });
    missing.enter();
    missing.leave();
    missing.enter();
    expect(missing.state).toBe('unavailable');
    expect(tries).toBe(1);

    const refusing = createIdlePoll({
      enabled: true,
      lingerMs: 0,
      open: () => ({
        write: () => {
          throw Object.assign(new Error('EINVAL'), { code: 'EINVAL' });
        },
        close: () => undefined,
      }),
    });
    refusing.enter();
    expect(refusing.state).toBe('unavailable');
    // A request's work still settles as it would have; leaves without enters are ignored.
    await expect(refusing.around(Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    refusing.leave();
    refusing.leave();
  });

  it('around counts a promise until it settles, rejected ones too', async () => {
    const device = recording();
    const poll = createIdlePoll({ enabled: true, lingerMs: 0, open: device.open });
    let finish: (v: number) => void = () => undefined;
    const work = poll.around(new Promise<number>((resolve) => (finish = resolve)));
    expect(poll.state).toBe('polling');
    finish(7);
    expect(await work).toBe(7);
    expect(poll.state).toBe('idle');
    await poll.around(Promise.reject(new Error('x'))).catch(() => undefined);
    expect(poll.state).toBe('idle');
    expect(device.writes).toEqual([0, NO_CONSTRAINT_US, 0, NO_CONSTRAINT_US]);
  });

  /** The kernel's current CPU latency target (what every request together asks for). */
  const currentTarget = (): number | undefined => {
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
      closeFd(fd);
    }
  };

  it.skipIf(currentTarget() === undefined)(
    'the real device: the kernel targets 0 µs while the request is held',
    () => {
      const request = openCpuLatency();
      expect(request).toBeDefined();
      try {
        request?.write(0);
        expect(currentTarget()).toBe(0);
        request?.write(NO_CONSTRAINT_US);
        // Other processes (services of other tests) may hold requests of their own: nothing below 0.
        expect(currentTarget()).toBeGreaterThanOrEqual(0);
      } finally {
        request?.close();
      }
    },
  );
});
