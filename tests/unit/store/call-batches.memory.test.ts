import { createMemoryCallBatchStore } from '../../../host/store/call-batches.ts';
import { runCallBatchContract } from './call-batches.contract.ts';

runCallBatchContract('memory', async () => {
  let at = 1_000_000;
  return {
    store: createMemoryCallBatchStore({ now: () => at }),
    advance: (ms) => {
      at += ms;
    },
    close: () => {},
  };
});
