// The TeamBoardStore contract: a board's tasks in id order, ids that are the board's sequence and
// never reused once a write that drew them committed, a write whose function throws changing nothing, every read and write confined to its tenant and team,
// write grants per tenant, the reads the write guard and an agent's deletion need, and everything
// still there for a second instance. Every implementation runs it through a one-line test file
// with an async factory. The rules of what a change may do are host/teams/board's (board.test.ts).
import { describe, expect, it } from 'vitest';
import type { TeamBoardStore, TeamTaskRecord } from '../../../host/store/team-board.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface TeamBoardStoreInstance {
  boards: TeamBoardStore;
  /** Another instance over the same storage (a restart / second process). */
  reopen?: () => Promise<TeamBoardStore>;
  close(): Promise<void> | void;
}

export type OpenTeamBoardStore = () => Promise<TeamBoardStoreInstance>;

const task = (id: string, over: Partial<TeamTaskRecord> = {}): TeamTaskRecord => ({
  id,
  subject: `task ${id}`,
  description: '',
  status: 'pending',
  blockedBy: [],
  writeScopes: [],
  revision: 1,
  createdBy: 'lead',
  createdAt: 1000,
  updatedAt: 1000,
  ...over,
});

export const runTeamBoardStoreContract = (name: string, openStore: OpenTeamBoardStore) => {
  describe(`TeamBoardStore contract (${name})`, () => {
    const open = closedAfterEach((): Promise<TeamBoardStoreInstance> => openStore());

    /** Creates tasks on a board through write, each with a fresh id. */
    const create = (boards: TeamBoardStore, tenantId: string, teamId: string, n: number, over = {}) =>
      boards.write(tenantId, teamId, (tx) => {
        const made: TeamTaskRecord[] = [];
        for (let i = 0; i < n; i++) {
          const t = task(tx.nextId(), over);
          tx.insert(t);
          made.push(t);
        }
        return made.map((t) => t.id);
      });

    it('hands out ids in sequence per board and reads tasks in id order', async () => {
      const { boards } = await open();
      expect(await create(boards, 'tn_1', 'lead', 2)).toEqual(['1', '2']);
      expect(await create(boards, 'tn_1', 'other', 1)).toEqual(['1']);
      expect(await create(boards, 'tn_1', 'lead', 1)).toEqual(['3']);
      expect((await boards.tasks('tn_1', 'lead')).map((t) => t.id)).toEqual(['1', '2', '3']);
      expect(await boards.tasks('tn_1', 'lead')).toContainEqual(task('2'));
    });

    it('resolves with what the function returned, which sees its own changes', async () => {
      const { boards } = await open();
      await create(boards, 'tn_1', 'lead', 2);
      const seen = await boards.write('tn_1', 'lead', (tx) => {
        tx.update({ ...task('1'), status: 'in_progress', owner: 'a', revision: 2 });
        tx.remove('2');
        return tx.tasks().map((t) => [t.id, t.status, t.owner ?? null]);
      });
      expect(seen).toEqual([['1', 'in_progress', 'a']]);
      expect(await boards.tasks('tn_1', 'lead')).toEqual([
        { ...task('1'), status: 'in_progress', owner: 'a', revision: 2 },
      ]);
    });

    it('rolls back everything a throwing function did, and rejects with its error', async () => {
      const { boards } = await open();
      await create(boards, 'tn_1', 'lead', 1);
      const failing = boards.write('tn_1', 'lead', (tx) => {
        tx.insert(task(tx.nextId()));
        tx.update({ ...task('1'), subject: 'changed', revision: 2 });
        tx.setGrant('a', ['src']);
        throw new Error('refused');
      });
      await expect(failing).rejects.toThrow('refused');
      expect(await boards.tasks('tn_1', 'lead')).toEqual([task('1')]);
      expect(await boards.grantOf('tn_1', 'a')).toBeUndefined();
      // The id drawn by the rolled-back write is handed out again: nothing committed used it.
      expect(await create(boards, 'tn_1', 'lead', 1)).toEqual(['2']);
    });

    it('runs writes given at once one after the other, each seeing the last', async () => {
      const { boards } = await open();
      const ids = await Promise.all([1, 2, 3].map(() => create(boards, 'tn_1', 'lead', 1)));
      expect(ids.flat().sort()).toEqual(['1', '2', '3']);
      expect(await boards.tasks('tn_1', 'lead')).toHaveLength(3);
    });

    it('two processes writing one board at once: gap-free ids, and a task claimed once', async (ctx) => {
      const { boards, reopen } = await open();
      if (reopen === undefined) return ctx.skip();
      const other = await reopen();
      const ids = await Promise.all(
        [boards, other, boards, other, boards, other].map((b) => create(b, 'tn_1', 'lead', 2)),
      );
      expect(ids.flat().sort((a, b) => Number(a) - Number(b))).toEqual(
        Array.from({ length: 12 }, (_, i) => String(i + 1)),
      );
      const claim = (b: TeamBoardStore, owner: string) =>
        b.write('tn_1', 'lead', (tx) => {
          const t = tx.tasks().find((x) => x.id === '1');
          if (t === undefined || t.status !== 'pending') return false;
          tx.update({ ...t, status: 'in_progress', owner, revision: t.revision + 1 });
          return true;
        });
      for (const id of ['a', 'b', 'c']) {
        const claims = await Promise.all([claim(boards, `${id}1`), claim(other, `${id}2`)]);
        expect(claims.filter(Boolean)).toHaveLength(id === 'a' ? 1 : 0);
      }
      const [first] = await other.tasks('tn_1', 'lead');
      expect(first).toMatchObject({ status: 'in_progress', revision: 2 });
      expect(['a1', 'a2']).toContain(first?.owner);
    });

    it('keeps tenants and teams apart', async () => {
      const { boards } = await open();
      await create(boards, 'tn_1', 'lead', 1, { status: 'in_progress', owner: 'a', writeScopes: ['src'] });
      await boards.write('tn_1', 'lead', (tx) => tx.setGrant('a', ['src']));
      expect(await boards.tasks('tn_2', 'lead')).toEqual([]);
      expect(await boards.tasks('tn_1', 'other')).toEqual([]);
      expect(await boards.grantOf('tn_2', 'a')).toBeUndefined();
      expect(await boards.scopedHeldBy('tn_2', 'a')).toEqual([]);
      expect(await create(boards, 'tn_2', 'lead', 1)).toEqual(['1']);
      await boards.write('tn_2', 'lead', (tx) => {
        expect(tx.tasks().map((t) => t.subject)).toEqual(['task 1']);
        expect(tx.grantOf('a')).toBeUndefined();
      });
    });

    it('keeps write grants per tenant agent, replaced on set', async () => {
      const { boards } = await open();
      await boards.write('tn_1', 'lead', (tx) => tx.setGrant('a', ['src']));
      expect(await boards.grantOf('tn_1', 'a')).toEqual(['src']);
      // A grant belongs to the tenant, not the board: another team's write sees it.
      await boards.write('tn_1', 'other', (tx) => {
        expect(tx.grantOf('a')).toEqual(['src']);
        tx.setGrant('a', ['src', 'docs']);
      });
      expect(await boards.grantOf('tn_1', 'a')).toEqual(['src', 'docs']);
    });

    it('finds the scoped tasks an agent holds, and the boards where it holds unfinished ones', async () => {
      const { boards } = await open();
      await create(boards, 'tn_1', 'lead', 1, { status: 'in_progress', owner: 'a', writeScopes: ['src'] });
      await create(boards, 'tn_1', 'lead', 1, { status: 'in_progress', owner: 'a' }); // no scopes
      await create(boards, 'tn_1', 'other', 1, { status: 'pending', owner: 'a', writeScopes: ['docs'] });
      await create(boards, 'tn_2', 'lead', 1, { status: 'completed', owner: 'a', writeScopes: ['x'] });
      expect((await boards.scopedHeldBy('tn_1', 'a')).map((t) => [t.id, t.writeScopes])).toEqual([
        ['1', ['src']],
      ]);
      const owning = await boards.boardsOwning('a');
      expect(owning.sort((x, y) => x.teamId.localeCompare(y.teamId))).toEqual([
        { tenantId: 'tn_1', teamId: 'lead' },
        { tenantId: 'tn_1', teamId: 'other' },
      ]);
      expect(await boards.boardsOwning('nobody')).toEqual([]);
    });

    it('is still there for a second instance, which goes on with the ids', async (ctx) => {
      const { boards, reopen } = await open();
      if (reopen === undefined) return ctx.skip();
      await create(boards, 'tn_1', 'lead', 2);
      await boards.write('tn_1', 'lead', (tx) => tx.setGrant('a', ['src']));
      const again = await reopen();
      expect((await again.tasks('tn_1', 'lead')).map((t) => t.id)).toEqual(['1', '2']);
      expect(await again.grantOf('tn_1', 'a')).toEqual(['src']);
      expect(await create(again, 'tn_1', 'lead', 1)).toEqual(['3']);
    });
  });
};
