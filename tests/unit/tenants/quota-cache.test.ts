// The plugins' quota cache (host/tenants/quota-cache.ts): a change the operator makes here is at
// hand at once, and a background read that began before it, answering what was stored then, does
// not put the old quotas back; a failing read keeps the last known ones.
import { afterEach, expect, it } from 'vitest';
import { openStore, type Store } from '../../../host/store/index.ts';
import type { TenantQuotaRow } from '../../../host/store/tenants-port.ts';
import {
  createTenantQuotaCache,
  pluginLimitsOf,
  type TenantQuotaCache,
} from '../../../host/tenants/quota-cache.ts';
import { until } from '../../helpers/until.ts';

let store: Store | undefined;
let cache: TenantQuotaCache | undefined;
afterEach(() => {
  cache?.close();
  store?.close();
});

it('keeps a change made here over a read that began before it, and the last quotas over a failing read', async () => {
  store = openStore({ path: ':memory:' });
  const { tenants } = store;
  const acme = await tenants.createTenant('acme');
  await tenants.setQuotas(acme.id, { plugins: 1 });
  // Every read is held until the test lets it answer (with what was stored when it began).
  const held: Array<() => void> = [];
  const list = tenants.listQuotas.bind(tenants);
  let failing = false;
  tenants.listQuotas = async () => {
    const answer = await list();
    await new Promise<void>((resolve) => held.push(resolve));
    if (failing) throw new Error('store: the server is restarting');
    return answer as TenantQuotaRow[];
  };
  const errors: unknown[] = [];
  cache = createTenantQuotaCache(tenants, { refreshMs: 1, onError: (e) => errors.push(e) });
  await until(() => held.length === 1);
  held.shift()?.();
  await cache.ready;
  expect(pluginLimitsOf(cache)(acme.id)).toEqual({ maxRunningPerTenant: 1 });
  // A read begins (it has read plugins: 1), then the operator sets 5 here: 5 at once, and still 5 after it.
  await until(() => held.length === 1);
  await tenants.setQuotas(acme.id, { plugins: 5 });
  expect(pluginLimitsOf(cache)(acme.id)).toEqual({ maxRunningPerTenant: 5 });
  held.shift()?.();
  await until(() => held.length === 1);
  expect(pluginLimitsOf(cache)(acme.id)).toEqual({ maxRunningPerTenant: 5 });
  // A read that fails keeps the last known quotas.
  failing = true;
  held.shift()?.();
  await until(() => errors.length === 1 && held.length === 1);
  expect(pluginLimitsOf(cache)(acme.id)).toEqual({ maxRunningPerTenant: 5 });
  failing = false;
  held.shift()?.();
});
