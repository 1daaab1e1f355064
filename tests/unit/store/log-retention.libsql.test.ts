import { openStore } from '../../../host/store/index.ts';
import { runLogRetentionContract } from './log-retention.contract.ts';

runLogRetentionContract({
  name: 'libsql',
  async open(now) {
    const store = openStore({ path: ':memory:', now });
    return { store, close: () => store.close() };
  },
});
