// Whether a tenant has a search provider is asked for every call batch (is web_search offered?), so
// the settings remember the answer for a moment (settings.ts hasSearch): a put through this service
// is seen at once, a change written by another process sharing the store at once when both hear
// the store's wake-up bus, else within SEARCH_MEMO_MS.
import { describe, expect, it } from 'vitest';
import { createEgressSettings, SEARCH_MEMO_MS } from '../../../host/egress/settings.ts';
import type { JsonValue } from '../../../host/json.ts';
import type { EgressSettingsStore } from '../../../host/store/egress.ts';
import { createLocalWakeBus } from '../../../host/store/wake-port.ts';

const memoryStore = () => {
  const docs = new Map<string, JsonValue>();
  let reads = 0;
  const store = {
    get: async (tenantId: string) => {
      reads++;
      return docs.get(tenantId);
    },
    put: async (tenantId: string, settings: JsonValue) => void docs.set(tenantId, settings),
    update: async (tenantId: string, fn: (before: JsonValue | undefined) => JsonValue) => {
      const next = fn(docs.get(tenantId));
      docs.set(tenantId, next);
      return next;
    },
  } as unknown as EgressSettingsStore;
  return { store, docs, reads: () => reads };
};
const maxBudget = { connections: 8, bytesPerHour: 1024 };
const search = { provider: 'searxng' as const, url: 'http://127.0.0.1:8888/' };

describe('egress settings: hasSearch', () => {
  it('sees a put through the service at once, both ways', async () => {
    const { store } = memoryStore();
    const settings = createEgressSettings({ store, maxBudget });
    expect(await settings.hasSearch('t')).toBe(false);
    await settings.put('t', { allow: [], search });
    expect(await settings.hasSearch('t')).toBe(true);
    await settings.put('t', { allow: [] });
    expect(await settings.hasSearch('t')).toBe(false);
  });

  it("reads the store once per moment, and sees another process's change within it", async () => {
    let now = 1000;
    const { store, docs, reads } = memoryStore();
    const settings = createEgressSettings({ store, maxBudget, now: () => now });
    expect(await settings.hasSearch('t')).toBe(false);
    expect(await settings.hasSearch('t')).toBe(false);
    expect(reads()).toBe(1);
    docs.set('t', { allow: [], credentials: [], search }); // written by another process
    now += SEARCH_MEMO_MS;
    expect(await settings.hasSearch('t')).toBe(true);
    expect(await settings.hasSearch('other')).toBe(false);
  });

  it("sees another process's change at once when both hear the wake-up bus", async () => {
    const { store } = memoryStore();
    const wake = createLocalWakeBus(); // stands in for the database's: each process hears the other
    const frozen = () => 0; // the memo never expires by itself
    const here = createEgressSettings({ store, maxBudget, now: frozen, wake });
    const there = createEgressSettings({ store, maxBudget, now: frozen, wake });
    expect(await here.hasSearch('t')).toBe(false);
    await there.put('t', { allow: [], search });
    expect(await here.hasSearch('t')).toBe(true);
  });
});
