import { createTeamBoardStore } from '../../../host/store/team-board.ts';
import { tempDatabase } from './harness.ts';
import { runTeamBoardStoreContract } from './team-board-store.contract.ts';

runTeamBoardStoreContract('libsql', async () => {
  const db = tempDatabase();
  return {
    boards: createTeamBoardStore(db.connect()),
    reopen: async () => createTeamBoardStore(db.connect()),
    close: db.cleanup,
  };
});
