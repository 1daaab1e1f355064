import { createSnapshotStore } from '../../../host/store/snapshots.ts';
import { createTenantStore } from '../../../host/store/tenants.ts';
import { tempDatabase } from './harness.ts';
import { runSnapshotStoreContract } from './snapshot-store.contract.ts';

runSnapshotStoreContract({
  name: 'libsql',
  async open() {
    const temp = tempDatabase();
    const db = temp.connect();
    return {
      store: createSnapshotStore(db),
      tenant: async (name) => (await createTenantStore(db).createTenant(name)).id,
      reopen: async () => createSnapshotStore(temp.connect()),
      close: temp.cleanup,
    };
  },
});
