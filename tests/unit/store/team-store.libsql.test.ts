import { createTeamStore } from '../../../host/store/teams.ts';
import { tempDatabase } from './harness.ts';
import { runTeamStoreContract } from './team-store.contract.ts';

runTeamStoreContract('libsql', async (now) => {
  const db = tempDatabase();
  return {
    teams: createTeamStore(db.connect(), now),
    reopen: async () => createTeamStore(db.connect()),
    close: db.cleanup,
  };
});
