import { createLibsqlPluginStore } from '../../../host/store/plugins.ts';
import { tempDatabase } from './harness.ts';
import { runPluginStoreContract } from './plugin-store.contract.ts';

runPluginStoreContract({
  name: 'libsql',
  async open(options) {
    const temp = tempDatabase();
    return {
      store: createLibsqlPluginStore(temp.connect(), options),
      reopen: async () => createLibsqlPluginStore(temp.connect(), options),
      close: temp.cleanup,
    };
  },
});
