import { createTenantStore, type TenantStore } from '../../../host/store/tenants.ts';
import { tempDatabase } from './harness.ts';
import { runTenantStoreContract } from './tenant-store.contract.ts';

runTenantStoreContract({
  name: 'libsql',
  async open(options = {}) {
    const temp = tempDatabase();
    let db = temp.connect();
    const store: TenantStore = createTenantStore(db, options.now);
    return {
      store,
      second: async () => createTenantStore(temp.connect()),
      async reopen() {
        db.close();
        db = temp.connect();
        return createTenantStore(db, options.now);
      },
      close: temp.cleanup,
    };
  },
});
