// The tenants' quotas at hand synchronously, for what asks them on a synchronous path (the plugin
// runtime's start: host/plugins/runtime/state.ts limitsOf). Loaded at start, set at once when the
// operator changes a tenant's in this process (the store tells it: store/tenant-quota-watch.ts),
// and read again every `refreshMs` in the background, so a change made through another replica
// is seen here within that time. Each read is the active tenants that have quotas
// (TenantStore.listQuotas, over an index of those alone), never every tenant: a platform of
// thousands of tenants, few with quotas, pays for the few.
// Invariants: get() never waits nor throws (before the first load, and for a tenant it does not
// know, it answers undefined: the service's limits hold); a read that began before a change made
// here never overwrites that change; close() stops the timer and any later read.
import { onQuotasSet } from '../store/tenant-quota-watch.ts';
import type { TenantQuotas, TenantStore } from '../store/tenants-port.ts';

export interface TenantQuotaCache {
  /** The tenant's quotas as last known here; undefined before the first load or when it has none. */
  get(tenantId: string): TenantQuotas | undefined;
  /** Settled once the first load answered (or failed). */
  readonly ready: Promise<void>;
  close(): void;
}

export interface TenantQuotaCacheOptions {
  /** How often the quotas are read again (other replicas' changes). Default 3000 ms. */
  refreshMs?: number;
  onError?: (error: unknown) => void;
}

export const createTenantQuotaCache = (
  tenants: TenantStore,
  options: TenantQuotaCacheOptions = {},
): TenantQuotaCache => {
  const refreshMs = options.refreshMs ?? 3000;
  let quotas = new Map<string, TenantQuotas>();
  /** A logical clock: when each read began and when each tenant was last set here. */
  let clock = 0;
  const setAt = new Map<string, number>();
  let closed = false;
  let timer: NodeJS.Timeout | undefined;

  const read = async (): Promise<void> => {
    const began = clock++;
    try {
      const rows = await tenants.listQuotas();
      if (closed) return;
      const next = new Map<string, TenantQuotas>();
      for (const { tenantId, quotas } of rows) next.set(tenantId, quotas);
      // A change made here after the read began is newer than what it read.
      for (const [id, at] of setAt)
        if (at > began) {
          const mine = quotas.get(id);
          if (mine === undefined) next.delete(id);
          else next.set(id, mine);
        }
      quotas = next;
    } catch (error) {
      options.onError?.(error); // the last known quotas stay; the next read tries again
    }
  };
  const schedule = (): void => {
    if (closed) return;
    timer = setTimeout(() => void read().then(schedule), refreshMs);
    timer.unref();
  };
  const unsubscribe = onQuotasSet(tenants, (id, set) => {
    setAt.set(id, clock++);
    if (Object.keys(set).length === 0) quotas.delete(id);
    else quotas.set(id, set);
  });
  const ready = read().then(schedule);
  return {
    get: (tenantId) => quotas.get(tenantId),
    ready,
    close() {
      closed = true;
      unsubscribe();
      if (timer !== undefined) clearTimeout(timer);
    },
  };
};

/** The plugin runtime's limitsOf over the cache: a tenant's `plugins` quota as its maxRunningPerTenant. */
export const pluginLimitsOf =
  (cache: Pick<TenantQuotaCache, 'get'>) =>
  (tenantId: string): { maxRunningPerTenant: number } | undefined => {
    const plugins = cache.get(tenantId)?.plugins;
    return plugins === undefined ? undefined : { maxRunningPerTenant: plugins };
  };
