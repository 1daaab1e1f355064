// The TenantSettingsStore contract (one JSON document per tenant, replaced whole): every backend
// runs this suite through a one-line test file. `tenant` makes a tenant the rows can belong to;
// `reopen` opens the store again on the same database (a restart or another process).
import { describe, expect, it } from 'vitest';
import type { TenantSettingsStore } from '../../../host/store/tenant-settings.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface TenantSettingsStoreInstance {
  store: TenantSettingsStore;
  tenant(name: string): Promise<string>;
  reopen(): Promise<TenantSettingsStore>;
  close(): Promise<void> | void;
}

export const runTenantSettingsStoreContract = (harness: {
  name: string;
  open(): Promise<TenantSettingsStoreInstance>;
}) => {
  describe(`TenantSettingsStore contract (${harness.name})`, () => {
    const open = closedAfterEach((): Promise<TenantSettingsStoreInstance> => harness.open());

    it('has no document for a tenant that never set one, then the one it put, replaced whole', async () => {
      const { store, tenant } = await open();
      const a = await tenant('a');
      const b = await tenant('b');
      expect(await store.get(a)).toBeUndefined();
      await store.put(a, { pause: { idleSeconds: 60, onCall: 'refuse' } });
      await store.put(a, { pause: { idleSeconds: 5 } });
      expect(await store.get(a)).toEqual({ pause: { idleSeconds: 5 } });
      expect(await store.get(b)).toBeUndefined();
    });

    it('keeps the document across a reopen', async () => {
      const { store, tenant, reopen } = await open();
      const a = await tenant('a');
      await store.put(a, { pause: { onCall: 'refuse' } });
      expect(await (await reopen()).get(a)).toEqual({ pause: { onCall: 'refuse' } });
    });
  });
};
