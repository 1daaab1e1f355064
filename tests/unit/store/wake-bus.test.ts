// The in-process wake-up bus of the libsql and memory stores (host/store/wake-port.ts): the WakeBus
// contract, nothing reaches other processes, and the libsql store publishes on it.
import { describe, expect, it } from 'vitest';
import { openStore } from '../../../host/store/index.ts';
import { createLocalWakeBus } from '../../../host/store/wake-port.ts';
import { runWakeBusContract } from './wake-bus.contract.ts';

runWakeBusContract('in-process', async (onError) => {
  const bus = createLocalWakeBus(onError);
  return { bus, close: () => bus.close() };
});

describe('the in-process wake-up bus', () => {
  it('reaches this process only', () => {
    const bus = createLocalWakeBus();
    expect(bus.reach).toBe('process');
    expect(bus.listening()).toBe(false);
  });

  it("is the libsql store's: a revoked key, a settled request and a mailbox post are published on it", async () => {
    const store = openStore({ path: ':memory:' });
    try {
      const heard: string[] = [];
      store.wake.subscribe('key', (id) => heard.push(`key ${id}`));
      store.wake.subscribe('request', (id) => heard.push(`request ${id}`));
      store.wake.subscribe('mail', (id) => heard.push(`mail ${id}`));
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
      await store.teams.post(
        { tenantId: 't', agentId: 'agt_to', fromId: 'agt_from', kind: 'message', body: 'hi' },
        10,
      );
      expect(heard).toEqual([`key ${keyId}`, `request ${request.id}`, 'mail agt_to']);
    } finally {
      await store.close();
    }
  });
});
