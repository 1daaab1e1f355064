import { createMemoryPluginStore } from '../../../host/store/memory.ts';
import { runPluginStoreContract } from './plugin-store.contract.ts';

runPluginStoreContract({
  name: 'memory',
  open: (options) => ({ store: createMemoryPluginStore(options), cleanup: () => {} }),
});
