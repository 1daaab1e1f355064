import { randomBytes } from 'node:crypto';
import { createEgressSettingsStore } from '../../../host/store/egress.ts';
import { createSealer } from '../../../host/store/sealed.ts';
import { createTenantStore } from '../../../host/store/tenants.ts';
import { runEgressSettingsStoreContract } from './egress-settings-store.contract.ts';
import { tempDatabase } from './harness.ts';

runEgressSettingsStoreContract({
  name: 'libsql, sealed',
  async open() {
    const temp = tempDatabase();
    const db = temp.connect();
    const sealer = createSealer(randomBytes(32));
    return {
      store: createEgressSettingsStore(db, Date.now, sealer),
      tenant: async (name) => (await createTenantStore(db).createTenant(name)).id,
      reopen: async () => createEgressSettingsStore(temp.connect(), Date.now, sealer),
      close: temp.cleanup,
    };
  },
});
