import { createNodeStore } from '../../../host/store/nodes.ts';
import { tempDatabase } from './harness.ts';
import { runNodeStoreContract } from './node-store.contract.ts';

runNodeStoreContract({
  name: 'libsql',
  async open() {
    const temp = tempDatabase();
    return {
      store: createNodeStore(temp.connect()),
      reopen: async () => createNodeStore(temp.connect()),
      close: temp.cleanup,
    };
  },
});
