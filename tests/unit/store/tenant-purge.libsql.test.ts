import { openStore } from '../../../host/store/index.ts';
import { runTenantPurgeContract } from './tenant-purge.contract.ts';

runTenantPurgeContract({
  name: 'libsql',
  async open() {
    const store = openStore({ path: ':memory:' });
    return { store, close: () => store.close() };
  },
});
