import { createMemoryPluginStore } from '../../../host/store/memory.ts';
import { runPluginStoreContract } from './plugin-store.contract.ts';

runPluginStoreContract({
  name: 'memory',
  open: async (options) => ({ store: createMemoryPluginStore(options), close: () => {} }),
});
