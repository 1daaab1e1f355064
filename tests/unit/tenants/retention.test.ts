// The retention pass (host/tenants/retention.ts) over an in-memory double of the store: each
// tenant's rule from its settings under the operator's maximum, slices until one removes nothing,
// freed bytes released to the event log, space given back only after something went, one tenant's
// failure not stopping the others, one pass at a time, and close() stopping after the slice in flight.
import { describe, expect, it } from 'vitest';
import { DEFAULT_TENANT_SETTINGS } from '../../../host/agents/tenant-settings.ts';
import type { LogRetentionStore, RetentionRule, SweptSlice } from '../../../host/store/log-retention-port.ts';
import { createLogRetention, ruleOf } from '../../../host/tenants/retention.ts';

const DAY = 86_400_000;
const NOW = 100 * DAY;

/** A store whose tenants each have `left` events, removed `limit` per slice at 10 bytes each. */
const fakeStore = (left: Record<string, number>, failing = new Set<string>()) => {
  const rules: Record<string, RetentionRule> = {};
  let compacted = 0;
  let inFlight = 0;
  let most = 0;
  const store: LogRetentionStore = {
    tenants: async () => Object.keys(left).map((tenantId) => ({ tenantId, bytes: left[tenantId]! * 10 })),
    sweepSlice: async (tenantId, rule, limit): Promise<SweptSlice> => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      if (failing.has(tenantId)) throw new Error(`store down for ${tenantId}`);
      rules[tenantId] = rule;
      const events = Math.min(limit, left[tenantId] ?? 0);
      left[tenantId] = (left[tenantId] ?? 0) - events;
      return { events, bytes: events * 10, payloads: 0 };
    },
    compact: async (pages) => {
      compacted++;
      return { freed: compacted === 1 ? pages : 0, left: 0 };
    },
  };
  return { store, rules, compacted: () => compacted, most: () => most };
};

const settings = (log: Partial<typeof DEFAULT_TENANT_SETTINGS.log> = {}) => ({
  get: async () => ({ log: { ...DEFAULT_TENANT_SETTINGS.log, ...log } }),
});

describe('the retention pass', () => {
  it("turns a tenant's settings and the operator's maximum into its rule", () => {
    const log = DEFAULT_TENANT_SETTINGS.log;
    expect(ruleOf(log, 0, NOW)).toEqual({ deletedBefore: NOW - 168 * 3_600_000 });
    expect(ruleOf({ ...log, retentionDays: 30 }, 0, NOW).before).toBe(NOW - 30 * DAY);
    expect(ruleOf({ ...log, retentionDays: 30 }, 7, NOW).before).toBe(NOW - 7 * DAY);
    expect(ruleOf({ ...log, retentionDays: 3 }, 7, NOW).before).toBe(NOW - 3 * DAY);
    expect(ruleOf(log, 7, NOW).before).toBe(NOW - 7 * DAY);
    expect(ruleOf({ ...log, retentionBytes: 1000 }, 0, NOW).maxBytes).toBe(1000);
  });

  it('slices each tenant until nothing more goes, releases what went, then gives the space back', async () => {
    const fake = fakeStore({ a: 7, b: 0, c: 3 });
    const released: [string, number][] = [];
    const pass = await createLogRetention({
      store: fake.store,
      settings: settings({ retentionDays: 1 }),
      events: { flush: async () => {}, release: (tenantId, bytes) => released.push([tenantId, bytes]) },
      maxDays: 0,
      sliceRows: 3,
      now: () => NOW,
    }).run();
    expect(pass).toMatchObject({ tenants: 2, events: 10, bytes: 100, slices: 4, pages: 512 });
    expect(released).toEqual([
      ['a', 30],
      ['a', 30],
      ['a', 10],
      ['c', 30],
    ]);
    expect(fake.rules.a!.before).toBe(NOW - DAY);
    expect(fake.compacted()).toBe(1);
  });

  it("one tenant's failure ends its turn, not the pass; a pass with nothing removed compacts nothing", async () => {
    const fake = fakeStore({ a: 2, b: 2 }, new Set(['a']));
    const errors: string[] = [];
    const retention = createLogRetention({
      store: fake.store,
      settings: settings(),
      events: { flush: async () => {}, release: () => {} },
      maxDays: 1,
      onError: (tenantId) => errors.push(tenantId),
    });
    expect(await retention.run()).toMatchObject({ tenants: 1, events: 2 });
    expect(errors).toEqual(['a']);
    const idle = fakeStore({ a: 0 });
    await createLogRetention({
      store: idle.store,
      settings: settings(),
      events: { flush: async () => {}, release: () => {} },
      maxDays: 1,
    }).run();
    expect(idle.compacted()).toBe(0);
  });

  it('runs one pass at a time, and close() stops after the slice in flight', async () => {
    const fake = fakeStore({ a: 1000 });
    const retention = createLogRetention({
      store: fake.store,
      settings: settings(),
      events: { flush: async () => {}, release: () => {} },
      maxDays: 1,
      sliceRows: 1,
    });
    const first = retention.run();
    const second = retention.run();
    await new Promise((resolve) => setImmediate(resolve));
    await retention.close();
    const [one, two] = await Promise.all([first, second]);
    expect(fake.most()).toBe(1);
    expect(one.events).toBeLessThan(1000);
    expect(two.events).toBe(0);
  });
});
