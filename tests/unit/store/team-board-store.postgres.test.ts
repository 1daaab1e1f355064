// The TeamBoardStore contract against PostgreSQL (host/store/pg/team-board.ts) in the run's
// private cluster: a fresh database per case; `reopen` is another pool on it (a second replica).
// Plus what only the rows show: the board's counter row holds what libsql's would.
import { afterEach, expect, it } from 'vitest';
import { createPgTeamBoardStore } from '../../../host/store/pg/team-board.ts';
import { createStoreDatabase, describePostgres, type StoreDatabase } from '../../helpers/postgres.ts';
import { runTeamBoardStoreContract } from './team-board-store.contract.ts';

describePostgres('TeamBoardStore (postgres)', () => {
  runTeamBoardStoreContract('postgres', async () => {
    const database = await createStoreDatabase();
    return {
      boards: createPgTeamBoardStore(database.open()),
      reopen: async () => createPgTeamBoardStore(database.open()),
      close: () => database.drop(),
    };
  });

  let database: StoreDatabase | undefined;
  afterEach(async () => {
    await database?.drop();
    database = undefined;
  });

  it("makes a board's counter row at the first id drawn, as libsql does, not at a write that draws none", async () => {
    database = await createStoreDatabase();
    const db = database.open();
    const boards = createPgTeamBoardStore(db);
    const counters = () =>
      db.many<{ team_id: string; next_seq: number }>(
        'SELECT team_id, next_seq FROM team_boards ORDER BY team_id',
      );
    await boards.write('tn_1', 'lead', (tx) => tx.setGrant('a', ['src']));
    expect(await counters()).toEqual([]);
    expect(await boards.grantOf('tn_1', 'a')).toEqual(['src']);
    await boards.write('tn_1', 'lead', (tx) => [tx.nextId(), tx.nextId()]);
    expect(await counters()).toEqual([{ team_id: 'lead', next_seq: 3 }]);
    await boards.write('tn_1', 'lead', (tx) => tx.tasks());
    expect(await counters()).toEqual([{ team_id: 'lead', next_seq: 3 }]);
  });
});
