// The TeamStore contract (child runs and mailboxes): mailboxes keep order, refuse past their size
// (reports in a room of their own per sender), deliver each item once and never a cancelled one; a
// run is settled only by the request it names; everything is still there for a second instance (a
// restart). Every implementation runs it through a one-line test file with an async factory.
import { describe, expect, it } from 'vitest';
import type { TeamStore } from '../../../host/store/teams.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface TeamStoreInstance {
  teams: TeamStore;
  /** Another instance over the same storage (a restart / second process). */
  reopen?: () => Promise<TeamStore>;
  close(): Promise<void> | void;
}

/** Opens a fresh, empty store whose clock is `now`. */
export type OpenTeamStore = (now: () => number) => Promise<TeamStoreInstance>;

const mail = (agentId: string, body: string) =>
  ({ tenantId: 'ten_a', agentId, fromId: 'agt_from', kind: 'message', body }) as const;

export const runTeamStoreContract = (name: string, openStore: OpenTeamStore) => {
  describe(`TeamStore contract (${name})`, () => {
    const open = closedAfterEach(async (): Promise<TeamStoreInstance> => {
      let t = 1000;
      return openStore(() => t++);
    });

    describe('mailboxes', () => {
      it('queue in order and deliver each item once', async () => {
        const { teams } = await open();
        const first = await teams.post(mail('agt_1', 'one'), 10);
        await teams.post(mail('agt_1', 'two'), 10);
        await teams.post(mail('agt_2', 'elsewhere'), 10);
        expect((await teams.undelivered('agt_1')).map((m) => m.body)).toEqual(['one', 'two']);
        expect(await teams.deliver('agt_1', first.id)).toBe(1);
        expect(await teams.deliver('agt_1', first.id)).toBe(0);
        expect((await teams.undelivered('agt_1')).map((m) => m.body)).toEqual(['two']);
        expect((await teams.list('agt_1')).map((m) => [m.body, m.deliveredAt !== undefined])).toEqual([
          ['one', true],
          ['two', false],
        ]);
        expect((await teams.list('agt_1', { afterId: first.id })).map((m) => m.body)).toEqual(['two']);
      });

      it('take a body with a NUL in it like any other text', async () => {
        // A model's or a client's text: Postgres text cannot hold a NUL, and a refused post would
        // lose a child's report. Every backend stores it (PostgreSQL with U+FFFD in its place).
        const { teams } = await open();
        await teams.post(mail('agt_1', 'be\0fore'), 10);
        expect((await teams.undelivered('agt_1')).map((m) => m.body)).toEqual([
          expect.stringMatching(/^be.fore$/),
        ]);
      });

      it('survive a restart', async (ctx) => {
        const { teams, reopen } = await open();
        if (reopen === undefined) return ctx.skip();
        const first = await teams.post(mail('agt_1', 'one'), 10);
        await teams.post(mail('agt_1', 'two'), 10);
        await teams.deliver('agt_1', first.id);
        const again = await reopen();
        expect((await again.undelivered('agt_1')).map((m) => m.body)).toEqual(['two']);
        expect((await again.list('agt_1')).map((m) => m.body)).toEqual(['one', 'two']);
      });

      it('refuse past their size with MAILBOX_FULL, counting only unread items', async () => {
        const { teams } = await open();
        await teams.post(mail('agt_1', 'a'), 2);
        const second = await teams.post(mail('agt_1', 'b'), 2);
        await expect(teams.post(mail('agt_1', 'c'), 2)).rejects.toMatchObject({
          code: 'MAILBOX_FULL',
          data: { agentId: 'agt_1', max: 2, kind: 'message' },
        });
        await teams.deliver('agt_1', second.id);
        expect((await teams.post(mail('agt_1', 'c'), 2)).body).toBe('c');
      });

      it('count reports apart, per sender: messages never crowd a report out', async () => {
        const { teams } = await open();
        const report = (fromId: string, body: string) => ({
          ...mail('agt_1', body),
          fromId,
          kind: 'report' as const,
        });
        await teams.post(mail('agt_1', 'a'), 1);
        await expect(teams.post(mail('agt_1', 'b'), 1)).rejects.toMatchObject({ code: 'MAILBOX_FULL' });
        await teams.post(report('agt_x', 'done'), 1);
        await teams.post(report('agt_y', 'done too'), 1);
        await expect(teams.post(report('agt_x', 'again'), 1)).rejects.toMatchObject({
          code: 'MAILBOX_FULL',
          data: { agentId: 'agt_1', max: 1, kind: 'report' },
        });
        expect((await teams.undelivered('agt_1')).map((m) => m.body)).toEqual(['a', 'done', 'done too']);
      });

      it('never let two posts at once both take the last place', async () => {
        const { teams } = await open();
        const posts = await Promise.allSettled([
          teams.post(mail('agt_1', 'a'), 1),
          teams.post(mail('agt_1', 'b'), 1),
        ]);
        expect(posts.filter((p) => p.status === 'fulfilled')).toHaveLength(1);
        expect(await teams.undelivered('agt_1')).toHaveLength(1);
      });

      it('never let two processes posting at once both take the last place', async (ctx) => {
        const { teams, reopen } = await open();
        if (reopen === undefined) return ctx.skip();
        const other = await reopen();
        for (let round = 1; round <= 5; round++) {
          const posts = await Promise.allSettled([
            teams.post(mail('agt_1', `a${round}`), round),
            other.post(mail('agt_1', `b${round}`), round),
          ]);
          expect(posts.filter((p) => p.status === 'fulfilled')).toHaveLength(1);
          expect(await teams.undelivered('agt_1')).toHaveLength(round);
        }
        const ids = (await other.undelivered('agt_1')).map((m) => m.id);
        expect(ids).toEqual([...ids].sort((x, y) => x - y));
      });

      it("cancels a deleted agent's unread items: never delivered, never listed", async () => {
        const { teams } = await open();
        await teams.post(mail('agt_1', 'a'), 10);
        expect(await teams.cancelPending('agt_1')).toBe(1);
        expect(await teams.undelivered('agt_1')).toEqual([]);
        expect(await teams.list('agt_1')).toEqual([]);
      });
    });

    describe('child runs', () => {
      const run = { agentId: 'agt_c', tenantId: 'ten_a', parentId: 'agt_p', description: 'd' };

      it('settle only while they still name the request', async () => {
        const { teams } = await open();
        await teams.putRun({ ...run, status: 'running', requestId: 'req_2' });
        expect(await teams.settleRun('agt_c', 'req_1', { status: 'completed', output: 'stale' })).toBe(false);
        expect(await teams.settleRun('agt_c', 'req_2', { status: 'completed', output: 'done' })).toBe(true);
        expect(await teams.settleRun('agt_c', 'req_2', { status: 'failed' })).toBe(false);
        expect(await teams.run('agt_c')).toMatchObject({ ...run, status: 'completed', output: 'done' });
        expect(await teams.run('agt_c')).not.toHaveProperty('requestId');
        await teams.putRun({ ...run, status: 'running', requestId: 'req_3' });
        expect((await teams.runsWith('running')).map((r) => r.requestId)).toEqual(['req_3']);
        expect(await teams.run('agt_missing')).toBeUndefined();
      });

      it('settle with an output that holds a NUL, as with any other text', async () => {
        // The output is what the client answered: refused, the run would stay running for good (a
        // foreground spawn waiting on it, and every start's resume() failing on it again).
        const { teams } = await open();
        await teams.putRun({ ...run, status: 'running', requestId: 'req_2', description: 'd\0' });
        expect(await teams.settleRun('agt_c', 'req_2', { status: 'completed', output: 'do\0ne' })).toBe(true);
        expect(await teams.run('agt_c')).toMatchObject({
          status: 'completed',
          description: expect.stringMatching(/^d.$/),
          output: expect.stringMatching(/^do.ne$/),
        });
        await teams.putRun({ ...run, status: 'completed', output: 'idle\0' });
        expect((await teams.run('agt_c'))?.output).toMatch(/^idle.$/);
      });

      it('are still there after a restart', async (ctx) => {
        const { teams, reopen } = await open();
        if (reopen === undefined) return ctx.skip();
        await teams.putRun({ ...run, status: 'running', requestId: 'req_2' });
        await teams.settleRun('agt_c', 'req_2', { status: 'completed', output: 'done' });
        expect(await (await reopen()).run('agt_c')).toMatchObject({
          ...run,
          status: 'completed',
          output: 'done',
        });
      });
    });
  });
};
