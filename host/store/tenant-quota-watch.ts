// What follows a tenant's quotas at once when the operator sets them in this process: the store's
// event log (its log budget: event-log-budget.ts setBudget) and whoever asked with onQuotasSet
// (the plugin runtime's cache: host/tenants/quota-cache.ts). Other processes on the same database
// hear of it by reading again (each says within how long).
// Invariant: a listener hears a change only after the store wrote it, with the quotas as stored.
import type { ClosableEventLog } from './event-log-port.ts';
import type { TenantQuotas, TenantStore } from './tenants-port.ts';

export type QuotasListener = (tenantId: string, quotas: TenantQuotas) => void;

/** Per watched tenant store: who hears its quota changes. */
const listeners = new WeakMap<TenantStore, Set<QuotasListener>>();

/** `tenants`, whose setQuotas also tells `events` and the listeners (onQuotasSet) once stored. */
export const watchQuotas = (
  tenants: TenantStore,
  events: Pick<ClosableEventLog, 'setBudget'>,
): TenantStore => {
  const heard = new Set<QuotasListener>();
  const watched: TenantStore = {
    ...tenants,
    async setQuotas(tenantId, quotas) {
      const tenant = await tenants.setQuotas(tenantId, quotas);
      if (tenant !== undefined) {
        const stored = tenant.quotas ?? {};
        events.setBudget(tenantId, stored.logBytes);
        for (const listener of heard) listener(tenantId, stored);
      }
      return tenant;
    },
  };
  listeners.set(watched, heard);
  return watched;
};

/** Calls `listener` after every quota change made through `tenants` (a watched store; others: never). The unsubscribe. */
export const onQuotasSet = (tenants: TenantStore, listener: QuotasListener): (() => void) => {
  const heard = listeners.get(tenants);
  heard?.add(listener);
  return () => heard?.delete(listener);
};
