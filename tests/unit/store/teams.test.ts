// Child runs and mailboxes in libsql (host/store/teams.ts): mailboxes keep order, refuse past their
// size (reports in a room of their own per sender), deliver each item once and never a cancelled one; a run is settled only by the request it
// names; everything is still there for a second connection (a restart).
import { afterEach, describe, expect, it } from 'vitest';
import { createTeamStore, type TeamStore } from '../../../host/store/teams.ts';
import { tempDatabase } from './harness.ts';

let cleanup: (() => void) | undefined;
afterEach(() => cleanup?.());

const open = (): { teams: TeamStore; reopen: () => TeamStore } => {
  const db = tempDatabase();
  cleanup = db.cleanup;
  let t = 1000;
  return { teams: createTeamStore(db.connect(), () => t++), reopen: () => createTeamStore(db.connect()) };
};

const mail = (agentId: string, body: string) =>
  ({ tenantId: 'ten_a', agentId, fromId: 'agt_from', kind: 'message', body }) as const;

describe('mailboxes', () => {
  it('queue in order, deliver each item once, and survive a restart', () => {
    const { teams, reopen } = open();
    const first = teams.post(mail('agt_1', 'one'), 10);
    teams.post(mail('agt_1', 'two'), 10);
    teams.post(mail('agt_2', 'elsewhere'), 10);
    expect(teams.undelivered('agt_1').map((m) => m.body)).toEqual(['one', 'two']);
    expect(teams.deliver('agt_1', first.id)).toBe(1);
    const again = reopen();
    expect(again.undelivered('agt_1').map((m) => m.body)).toEqual(['two']);
    expect(again.list('agt_1').map((m) => [m.body, m.deliveredAt !== undefined])).toEqual([
      ['one', true],
      ['two', false],
    ]);
    expect(again.list('agt_1', { afterId: first.id }).map((m) => m.body)).toEqual(['two']);
  });

  it('refuse past their size with MAILBOX_FULL, counting only unread items', () => {
    const { teams } = open();
    teams.post(mail('agt_1', 'a'), 2);
    const second = teams.post(mail('agt_1', 'b'), 2);
    expect(() => teams.post(mail('agt_1', 'c'), 2)).toThrow(
      expect.objectContaining({ code: 'MAILBOX_FULL', data: { agentId: 'agt_1', max: 2, kind: 'message' } }),
    );
    teams.deliver('agt_1', second.id);
    expect(teams.post(mail('agt_1', 'c'), 2).body).toBe('c');
  });

  it('count reports apart, per sender: messages never crowd a report out', () => {
    const { teams } = open();
    const report = (fromId: string, body: string) => ({
      ...mail('agt_1', body),
      fromId,
      kind: 'report' as const,
    });
    teams.post(mail('agt_1', 'a'), 1);
    expect(() => teams.post(mail('agt_1', 'b'), 1)).toThrow(
      expect.objectContaining({ code: 'MAILBOX_FULL' }),
    );
    teams.post(report('agt_x', 'done'), 1);
    teams.post(report('agt_y', 'done too'), 1);
    expect(() => teams.post(report('agt_x', 'again'), 1)).toThrow(
      expect.objectContaining({ code: 'MAILBOX_FULL', data: { agentId: 'agt_1', max: 1, kind: 'report' } }),
    );
    expect(teams.undelivered('agt_1').map((m) => m.body)).toEqual(['a', 'done', 'done too']);
  });

  it("cancels a deleted agent's unread items: never delivered, never listed", () => {
    const { teams } = open();
    teams.post(mail('agt_1', 'a'), 10);
    expect(teams.cancelPending('agt_1')).toBe(1);
    expect(teams.undelivered('agt_1')).toEqual([]);
    expect(teams.list('agt_1')).toEqual([]);
  });
});

describe('child runs', () => {
  it('settle only while they still name the request, and announce the outcome once', () => {
    const { teams, reopen } = open();
    const run = { agentId: 'agt_c', tenantId: 'ten_a', parentId: 'agt_p', description: 'd' };
    teams.putRun({ ...run, status: 'running', requestId: 'req_2' });
    expect(teams.settleRun('agt_c', 'req_1', { status: 'completed', output: 'stale' })).toBe(false);
    expect(teams.settleRun('agt_c', 'req_2', { status: 'completed', output: 'done' })).toBe(true);
    expect(teams.settleRun('agt_c', 'req_2', { status: 'failed' })).toBe(false);
    expect(reopen().run('agt_c')).toMatchObject({ ...run, status: 'completed', output: 'done' });
    expect(teams.run('agt_c')).not.toHaveProperty('requestId');
    teams.putRun({ ...run, status: 'running', requestId: 'req_3' });
    expect(teams.runsWith('running').map((r) => r.requestId)).toEqual(['req_3']);
  });
});
