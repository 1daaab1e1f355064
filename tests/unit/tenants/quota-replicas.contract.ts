// A tenant's logBytes and plugins quotas as another replica sees them: two stores (two processes'
// worth: two event logs, two tenant stores) on one database. The replica where the operator set
// them follows at once; the other one re-reads within its refresh time (the event log at the
// tenant's first append past BUDGET_REFRESH_MS, the plugins' quota cache every refreshMs).
import { afterEach, expect, it } from 'vitest';
import { BUDGET_REFRESH_MS } from '../../../host/store/event-log-budget.ts';
import type { Store } from '../../../host/store/store.ts';
import {
  createTenantQuotaCache,
  pluginLimitsOf,
  type TenantQuotaCache,
} from '../../../host/tenants/quota-cache.ts';
import { until } from '../../helpers/until.ts';

const KiB = 1024;

/** Opens one replica's store on the shared database, with its own clock. */
export type OpenReplica = (now: () => number) => Promise<Store>;

export const runQuotaReplicasContract = (open: () => Promise<OpenReplica>, done: () => Promise<void>) => {
  const stores: Store[] = [];
  const caches: TenantQuotaCache[] = [];
  afterEach(async () => {
    for (const c of caches.splice(0)) c.close();
    for (const s of stores.splice(0)) await s.close();
    await done();
  });

  it("follows the operator's logBytes and plugins quotas: here at once, on the other replica within its refresh", async () => {
    const replica = await open();
    let clock = 1_000_000;
    const here = await replica(() => clock);
    const there = await replica(() => clock);
    stores.push(here, there);
    const tenant = await here.tenants.createTenant('acme');
    const agent = await here.agents.create({ tenantId: tenant.id, preset: 'p', mode: 'native', config: {} });
    const event = (i: number) => ({
      sessionId: agent.id,
      surface: 'current' as const,
      type: 'tool.call',
      callId: `c${i}`,
      data: { name: 'write', content: `${i}:`.padEnd(8 * KiB, 'x') },
    });
    const thereCache = createTenantQuotaCache(there.tenants, { refreshMs: 10 });
    caches.push(thereCache);
    await thereCache.ready;
    // Both replicas have appended under the service's budget.
    await here.events.append([event(0)]);
    await there.events.append([event(1)]);
    await there.events.flush();
    expect(pluginLimitsOf(thereCache)(tenant.id)).toBeUndefined();

    await here.tenants.setQuotas(tenant.id, { logBytes: 16 * KiB, plugins: 2 });
    // Here: at once, and the refusal names the tenant's budget.
    await expect(here.events.append([event(2)])).rejects.toMatchObject({
      code: 'STORE_BUDGET_EXCEEDED',
      data: { tenantId: tenant.id, budget: 16 * KiB },
    });
    // There: the log still counts the service's budget until its refresh time has passed.
    await there.events.append([event(3)]);
    clock += BUDGET_REFRESH_MS;
    await expect(there.events.append([event(4)])).rejects.toMatchObject({
      code: 'STORE_BUDGET_EXCEEDED',
      data: { budget: 16 * KiB },
    });
    // The plugins' cap there follows within the cache's refresh.
    await until(() => pluginLimitsOf(thereCache)(tenant.id)?.maxRunningPerTenant === 2, {
      what: "the other replica's plugins quota",
    });
    // Cleared: the service's budget and cap again.
    await here.tenants.setQuotas(tenant.id, {});
    await here.events.append([event(5)]);
    clock += BUDGET_REFRESH_MS;
    await there.events.append([event(6)]);
    await until(() => pluginLimitsOf(thereCache)(tenant.id) === undefined, {
      what: 'the quota cleared there',
    });
  });
};
