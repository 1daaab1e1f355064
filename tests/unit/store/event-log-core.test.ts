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
