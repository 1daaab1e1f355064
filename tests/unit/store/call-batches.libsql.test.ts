import { createCallBatchStore } from '../../../host/store/call-batches.ts';
import { runCallBatchContract } from './call-batches.contract.ts';
import { tempDatabase } from './harness.ts';

runCallBatchContract('libsql', async () => {
  const temp = tempDatabase();
  let at = 1_000_000;
  const now = () => at;
  const db = temp.connect();
  return {
    store: createCallBatchStore(db, now),
    reopen: async () => createCallBatchStore(temp.connect(), now),
    advance: (ms) => {
      at += ms;
    },
    close: temp.cleanup,
  };
});
