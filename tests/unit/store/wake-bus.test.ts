// The in-process wake-up bus of the libsql and memory stores (host/store/wake-port.ts): a publish
// reaches this process's subscribers synchronously, once each; a subscriber that throws is told to
// onError and the others still hear it; unsubscribing ends it; nothing reaches other processes.
import { describe, expect, it } from 'vitest';
import { openStore } from '../../../host/store/index.ts';
import { createLocalWakeBus } from '../../../host/store/wake-port.ts';

describe('the in-process wake-up bus', () => {
  it('tells every subscriber of the topic synchronously, and a throwing one is reported', () => {
    const errors: unknown[] = [];
    const bus = createLocalWakeBus((e) => errors.push(e));
    const heard: string[] = [];
    bus.subscribe('mail', () => {
      throw new Error('boom');
    });
    const off = bus.subscribe('mail', (id) => heard.push(`mail ${id}`));
    bus.subscribe('key', (id) => heard.push(`key ${id}`));
    void bus.publish('mail', 'agt_1');
    expect(heard).toEqual(['mail agt_1']);
    expect(errors).toHaveLength(1);
    off();
    void bus.publish('mail', 'agt_2');
    void bus.publish('key', 'key_1');
    expect(heard).toEqual(['mail agt_1', 'key key_1']);
    expect(bus.reach).toBe('process');
    expect(bus.listening()).toBe(false);
  });

  it("is the libsql store's: a revoked key and a settled request are published on it", async () => {
    const store = openStore({ path: ':memory:' });
    try {
      const heard: string[] = [];
      store.wake.subscribe('key', (id) => heard.push(`key ${id}`));
      store.wake.subscribe('request', (id) => heard.push(`request ${id}`));
      const { keyId } = await store.tenants.createTenant('acme');
      await store.tenants.revokeKey(keyId);
      const request = await store.requests.create({
        sessionId: 's',
        kind: 'approval',
        callId: 'c',
        payload: {},
        expiresAt: Date.now() + 60_000,
      });
      await store.requests.answer(request.id, true);
      expect(heard).toEqual([`key ${keyId}`, `request ${request.id}`]);
    } finally {
      await store.close();
    }
  });
});
