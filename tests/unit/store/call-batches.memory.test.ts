import { createMemoryCallBatchStore } from '../../../host/store/call-batches.ts';
import { runCallBatchContract } from './call-batches.contract.ts';

runCallBatchContract('memory', async () => {
  let at = 1_000_000;
  const seqs = new Map<string, number>();
  return {
    store: createMemoryCallBatchStore({ now: () => at, lastSeq: (id) => seqs.get(id) ?? 0 }),
    advance: (ms) => {
      at += ms;
    },
    logUpTo: async (id, seq) => {
      seqs.set(id, seq);
    },
    close: () => {},
  };
});
