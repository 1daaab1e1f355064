import { createTenantSettingsStore } from '../../../host/store/tenant-settings.ts';
import { createTenantStore } from '../../../host/store/tenants.ts';
import { tempDatabase } from './harness.ts';
import { runTenantSettingsStoreContract } from './tenant-settings-store.contract.ts';

runTenantSettingsStoreContract({
  name: 'libsql',
  async open() {
    const temp = tempDatabase();
    const db = temp.connect();
    return {
      store: createTenantSettingsStore(db),
      tenant: async (name) => (await createTenantStore(db).createTenant(name)).id,
      reopen: async () => createTenantSettingsStore(temp.connect()),
      close: temp.cleanup,
    };
  },
});
