import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../../../host/store/index.ts';
import { tempDatabase } from './harness.ts';

describe('openStore', () => {
  let temp: ReturnType<typeof tempDatabase>;
  afterEach(() => temp.cleanup());

  it('writes queued events and keeps pending requests when closed, for the next start to find', async () => {
    temp = tempDatabase();
    const first = openStore({ dataDir: temp.dir });
    first.events.append([{ sessionId: 's', type: 'tool.call', surface: 'current', data: { n: 1 } }]);
    const request = first.requests.create({
      sessionId: 's',
      kind: 'remote_tool',
      callId: 'c1',
      payload: { name: 'lookup' },
      expiresAt: Date.now() + 60_000,
    });
    first.close();
    first.close();
    const second = openStore({ dataDir: temp.dir });
    try {
      expect(second.events.list('s').map((e) => e.type)).toEqual(['tool.call', 'request.created']);
      expect(second.requests.list('s', 'pending').map((r) => r.id)).toEqual([request.id]);
    } finally {
      second.close();
    }
  });

  it('works on :memory: for tests', () => {
    temp = tempDatabase();
    const store = openStore({ path: ':memory:' });
    expect(store.tenants.listTenants()).toEqual([]);
    store.close();
  });
});
