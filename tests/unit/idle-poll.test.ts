import { describe, expect, it, vi } from 'vitest';
import { createIdlePoll, NO_CONSTRAINT_US, openCpuLatency, whilePolling } from '../../host/idle-poll.ts';
import { currentTarget, recordingDevice } from '../helpers/cpu-latency.ts';

describe('idle polling while calls come and go', () => {
  it('asks for 0 µs at the first touch and lifts it once the linger passed with no touch', () => {
    vi.useFakeTimers();
    try {
      const device = recordingDevice();
      const poll = createIdlePoll({ enabled: true, lingerMs: 10, open: device.open });
      expect(poll.state).toBe('idle');
      expect(device.opened).toBe(0); // nothing is opened before it is needed
      poll.touch();
      poll.touch();
      expect(poll.state).toBe('polling');
      expect(device.writes).toEqual([0]); // one request for both
      vi.advanceTimersByTime(6);
      poll.touch();
      vi.advanceTimersByTime(6);
      expect(poll.state).toBe('polling'); // 6 ms after the last touch
      vi.advanceTimersByTime(5);
      expect(poll.state).toBe('idle');
      expect(device.writes).toEqual([0, NO_CONSTRAINT_US]);
      poll.touch();
      expect(device.writes).toEqual([0, NO_CONSTRAINT_US, 0]);
      expect(device.opened).toBe(1); // the same request, updated
      poll.close();
      expect(device.closed).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('calls every few ms keep it polling with one write; a call that waits long does not', async () => {
    vi.useFakeTimers();
    try {
      const device = recordingDevice();
      const poll = createIdlePoll({ enabled: true, lingerMs: 10, open: device.open });
      for (let i = 0; i < 100; i++) {
        poll.touch();
        vi.advanceTimersByTime(5);
      }
      expect(device.writes).toEqual([0]);
      vi.advanceTimersByTime(11);
      expect(device.writes).toEqual([0, NO_CONSTRAINT_US]);

      // A call that takes a minute: touched when made and when it ends, idle in between.
      let finish: (v: string) => void = () => undefined;
      const slow = whilePolling(poll, () => new Promise<string>((resolve) => (finish = resolve)));
      const answer = slow();
      expect(poll.state).toBe('polling');
      vi.advanceTimersByTime(60_000);
      expect(poll.state).toBe('idle');
      finish('done');
      expect(await answer).toBe('done');
      expect(poll.state).toBe('polling');
      expect(device.writes).toEqual([0, NO_CONSTRAINT_US, 0, NO_CONSTRAINT_US, 0]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('off writes nothing; a device that cannot be opened or written turns it off for good, quietly', async () => {
    const device = recordingDevice();
    const off = createIdlePoll({ enabled: false, lingerMs: 10, open: device.open });
    off.touch();
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
    missing.touch();
    missing.touch();
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
    refusing.touch();
    expect(refusing.state).toBe('unavailable');
    // The wrapped work still answers as it would have, a throw and a rejection included.
    const failing = whilePolling(refusing, (): Promise<never> => Promise.reject(new Error('boom')));
    await expect(failing()).rejects.toThrow('boom');
    const throwing = whilePolling(refusing, (): number => {
      throw new Error('sync');
    });
    expect(() => throwing()).toThrow('sync');
    expect(whilePolling(refusing, (a: number, b: number) => a + b)(2, 3)).toBe(5);
  });

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
