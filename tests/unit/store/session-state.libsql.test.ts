import { createSessionStateStore } from '../../../host/store/session-state.ts';
import { tempDatabase } from './harness.ts';
import { runSessionStateContract } from './session-state.contract.ts';

runSessionStateContract('libsql', async () => {
  const temp = tempDatabase();
  return {
    store: createSessionStateStore(temp.connect()),
    reopen: async () => createSessionStateStore(temp.connect()),
    close: temp.cleanup,
  };
});
