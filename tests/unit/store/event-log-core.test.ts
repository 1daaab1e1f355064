import { describe, expect, it } from 'vitest';
import { createEventLog } from '../../../host/store/event-log-core.ts';
import type { EventBackend, EventRow } from '../../../host/store/event-log-port.ts';
import { createMemoryEventBackend } from '../../../host/store/memory.ts';
import { until } from '../../helpers/until.ts';

/** A backend that fails its next `failures` writes. */
const flaky = (failures: number) => {
  const stored: EventRow[] = [];
  let left = failures;
  const backend: EventBackend = {
    ...createMemoryEventBackend(),
    lastSeq: () => 0,
    write(rows) {
      if (left-- > 0) throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
      stored.push(...rows);
    },
    read: (sessionId, afterSeq, limit) =>
      stored.filter((r) => r.sessionId === sessionId && r.seq > afterSeq).slice(0, limit),
  };
  return { backend, stored };
};

describe('event log writer', () => {
  it('keeps events queued and readable when a write fails, and writes them on the next try', async () => {
    const { backend, stored } = flaky(1);
    const errors: unknown[] = [];
    const log = createEventLog(backend, { onError: (e) => errors.push(e) });
    const got: number[] = [];
    log.subscribe('s', (e) => got.push(e.seq));
    void log.append([{ sessionId: 's', type: 'x', surface: 'current', data: 1 }]);
    await expect(log.flush()).rejects.toThrow('disk I/O error');
    expect((await log.list('s')).map((e) => e.seq)).toEqual([1]);
    expect(got).toEqual([]); // subscribers only hear about durable events
    void log.append([{ sessionId: 's', type: 'x', surface: 'current', data: 2 }]);
    await log.flush();
    expect(stored.map((r) => r.seq)).toEqual([1, 2]);
    expect(got).toEqual([1, 2]);
    log.close();
  });

  it('retries a failed background write by itself and reports the failure', async () => {
    const { backend, stored } = flaky(1);
    const errors: unknown[] = [];
    const log = createEventLog(backend, { onError: (e) => errors.push(e) });
    void log.append([{ sessionId: 's', type: 'x', surface: 'current', data: 1 }]);
    await until(() => stored.length > 0, { what: 'the retried write' });
    expect(errors).toHaveLength(1);
    expect(stored.map((r) => r.seq)).toEqual([1]);
    log.close();
  });
});

describe('an asynchronous backend', () => {
  it("loads a session's tenant, seq and usage once for an append of many of its events", async () => {
    const inner = createMemoryEventBackend();
    const calls = new Map<string, number>();
    const later =
      <A extends unknown[], T>(name: string, fn: (...args: A) => T) =>
      (...args: A): Promise<T> => {
        calls.set(name, (calls.get(name) ?? 0) + 1);
        return new Promise((resolve) => setImmediate(() => resolve(fn(...args))));
      };
    const backend: EventBackend = {
      lastSeq: later('lastSeq', inner.lastSeq),
      tenantOf: later('tenantOf', inner.tenantOf),
      usage: later('usage', inner.usage),
      usageAll: later('usageAll', inner.usageAll),
      readBlob: later('readBlob', inner.readBlob),
      hasBlob: later('hasBlob', inner.hasBlob),
      write: later('write', inner.write),
      read: later('read', inner.read),
      callRows: later('callRows', inner.callRows),
    };
    const log = createEventLog(backend);
    const events = Array.from({ length: 1000 }, (_, i) => ({
      sessionId: i % 2 === 0 ? 's' : 't',
      type: 'x',
      surface: 'current' as const,
      data: i,
    }));
    expect((await log.append(events)).at(-1)?.seq).toBe(500);
    await log.flush();
    expect(Object.fromEntries(calls)).toEqual({ tenantOf: 2, lastSeq: 2, usage: 1, write: 1 });
    await log.close();
  });
});
