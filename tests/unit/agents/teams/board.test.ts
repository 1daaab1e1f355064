// The team task board: optimistic revisions, dependencies (same board, no cycles), the computed
// `ready`, each action's rules, cursor paging, limits, durability across a reopened store, and
// every change told as a `team.task` event on the lead's log and to onBoardChange.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../../host/store/index.ts';
import { createTeamBoard } from '../../../../host/teams/board/board.ts';
import type { BoardChange, TeamDirectory } from '../../../../host/teams/board/types.ts';

const TEAM: TeamDirectory = {
  teamOf: async (id) => (['lead', 'a', 'b'].includes(id) ? 'lead' : undefined),
  members: async (teamId) =>
    teamId === 'lead'
      ? [{ id: 'lead' }, { id: 'a', name: 'alice' }, { id: 'b', name: 'bob' }]
      : [{ id: teamId }],
  ancestors: async () => [],
};

const stores: Store[] = [];
afterEach(() => {
  for (const store of stores.splice(0)) store.close();
});

const setup = (limits = {}) => {
  const store = openStore({ path: ':memory:' });
  stores.push(store);
  const changes: BoardChange[] = [];
  const board = createTeamBoard({ store: store.teamBoards, events: store.events, directory: TEAM, limits });
  board.onBoardChange((change) => changes.push(change));
  return {
    store,
    board,
    changes,
    lead: board.forAgent('tn_1', 'lead'),
    a: board.forAgent('tn_1', 'a'),
    b: board.forAgent('tn_1', 'b'),
  };
};

const task = (subject: string, more = {}) => ({ subject, description: `do ${subject}`, ...more });
const code = (code: string, message?: RegExp) =>
  expect.objectContaining({ code, ...(message ? { message: expect.stringMatching(message) } : {}) });

describe('the task board', () => {
  it('a stale expected_revision is REVISION_CONFLICT naming the current revision', async () => {
    const { lead, a } = setup();
    const t = await lead.create(task('parse'));
    expect(t).toMatchObject({ task_id: '1', revision: 1, status: 'pending', owner: null, ready: true });
    const edited = await lead.update({
      task_id: '1',
      expected_revision: 1,
      action: 'edit',
      subject: 'parse it',
    });
    expect(edited.revision).toBe(2);
    await expect(a.update({ task_id: '1', expected_revision: 1, action: 'claim' })).rejects.toEqual(
      code('REVISION_CONFLICT', /at revision 2, not 1/),
    );
    await expect(a.update({ task_id: '1', expected_revision: 1, action: 'claim' })).rejects.toMatchObject({
      data: { currentRevision: 2 },
    });
  });

  it('blocked_by must name tasks of the same board, and cycles are refused naming the cycle', async () => {
    const { lead, board } = setup();
    await lead.create(task('one'));
    await lead.create(task('two', { blocked_by: ['1'] }));
    await lead.create(task('three', { blocked_by: ['2'] }));
    await expect(lead.create(task('x', { blocked_by: ['9'] }))).rejects.toEqual(
      code('INVALID_ARGUMENTS', /"9"/),
    );
    // Another team's board is another board: its task 1 is not this one's.
    const other = board.forAgent('tn_1', 'loner');
    await other.create(task('solo'));
    await expect(other.create(task('y', { blocked_by: ['2'] }))).rejects.toEqual(code('INVALID_ARGUMENTS'));
    await expect(
      lead.update({ task_id: '1', expected_revision: 1, action: 'set_dependencies', blocked_by: ['3'] }),
    ).rejects.toMatchObject({ code: 'DEPENDENCY_CYCLE', data: { cycle: ['1', '3', '2', '1'] } });
    await expect(
      lead.update({ task_id: '1', expected_revision: 1, action: 'set_dependencies', blocked_by: ['1'] }),
    ).rejects.toEqual(code('DEPENDENCY_CYCLE', /1 → 1/));
    // Nothing changed: the revision is still 1.
    expect((await lead.get('1')).revision).toBe(1);
  });

  it('ready: pending with every blocker completed; claim takes only ready tasks', async () => {
    const { lead, a } = setup();
    await lead.create(task('one'));
    await lead.create(task('two', { blocked_by: ['1'] }));
    const ready = async () => (await lead.list({ ready: true })).tasks.map((t) => t.task_id);
    expect(await ready()).toEqual(['1']);
    await expect(a.update({ task_id: '2', expected_revision: 1, action: 'claim' })).rejects.toMatchObject({
      code: 'TASK_BLOCKED',
      data: { open: ['1'] },
    });
    const claimed = await a.update({ task_id: '1', expected_revision: 1, action: 'claim' });
    expect(claimed).toMatchObject({ status: 'in_progress', owner: 'a', ready: false, revision: 2 });
    expect(await ready()).toEqual([]);
    await a.update({ task_id: '1', expected_revision: 2, action: 'complete' });
    expect(await ready()).toEqual(['2']);
    expect(await lead.get('2')).toMatchObject({ ready: true, open_blockers: [] });
  });

  it('claim, release, complete, reopen and reassign follow their rules', async () => {
    const { lead, a, b } = setup();
    await lead.create(task('one'));
    await a.update({ task_id: '1', expected_revision: 1, action: 'claim' });
    // Held by a: b can neither claim, complete nor release it; the lead can release it.
    await expect(b.update({ task_id: '1', expected_revision: 2, action: 'claim' })).rejects.toEqual(
      code('TASK_STATE'),
    );
    await expect(b.update({ task_id: '1', expected_revision: 2, action: 'complete' })).rejects.toEqual(
      code('NOT_TASK_OWNER'),
    );
    await expect(b.update({ task_id: '1', expected_revision: 2, action: 'release' })).rejects.toEqual(
      code('NOT_TASK_OWNER'),
    );
    await expect(lead.update({ task_id: '1', expected_revision: 2, action: 'complete' })).rejects.toEqual(
      code('NOT_TASK_OWNER'),
    );
    const released = await lead.update({ task_id: '1', expected_revision: 2, action: 'release' });
    expect(released).toMatchObject({ status: 'pending', owner: null, revision: 3 });
    await expect(a.update({ task_id: '1', expected_revision: 3, action: 'complete' })).rejects.toEqual(
      code('TASK_STATE', /claim it first/),
    );
    // Reassign by name reserves it for bob: alice cannot claim it, bob can.
    const reserved = await lead.update({
      task_id: '1',
      expected_revision: 3,
      action: 'reassign',
      owner: 'bob',
    });
    expect(reserved).toMatchObject({ status: 'pending', owner: 'b', ready: true });
    await expect(a.update({ task_id: '1', expected_revision: 4, action: 'claim' })).rejects.toEqual(
      code('NOT_TASK_OWNER'),
    );
    await expect(
      lead.update({ task_id: '1', expected_revision: 4, action: 'reassign', owner: 'mallory' }),
    ).rejects.toEqual(code('INVALID_ARGUMENTS', /not a member/));
    await b.update({ task_id: '1', expected_revision: 4, action: 'claim' });
    const done = await b.update({ task_id: '1', expected_revision: 5, action: 'complete' });
    expect(done).toMatchObject({ status: 'completed', owner: 'b' });
    await expect(
      b.update({ task_id: '1', expected_revision: 6, action: 'reassign', owner: 'a' }),
    ).rejects.toEqual(code('TASK_STATE'));
    const reopened = await a.update({ task_id: '1', expected_revision: 6, action: 'reopen' });
    expect(reopened).toMatchObject({ status: 'pending', owner: null, revision: 7 });
    await expect(a.update({ task_id: '1', expected_revision: 7, action: 'reopen' })).rejects.toEqual(
      code('TASK_STATE'),
    );
  });

  it("edit, set_dependencies and delete: anyone's while unowned, then the owner's or the lead's", async () => {
    const { lead, a, b } = setup();
    await lead.create(task('one'));
    await lead.create(task('two', { blocked_by: ['1'] }));
    await a.update({ task_id: '2', expected_revision: 1, action: 'set_dependencies', blocked_by: [] });
    await a.update({ task_id: '2', expected_revision: 2, action: 'claim' });
    await expect(
      b.update({ task_id: '2', expected_revision: 3, action: 'edit', description: 'mine now' }),
    ).rejects.toEqual(code('NOT_TASK_OWNER'));
    const edited = await lead.update({
      task_id: '2',
      expected_revision: 3,
      action: 'edit',
      write_scopes: ['./src/../src/parser/', '/workspace/docs/*.md'],
    });
    expect(edited.write_scopes).toEqual(['src/parser', 'docs/*.md']);
    await expect(
      a.update({ task_id: '2', expected_revision: 4, action: 'set_dependencies', blocked_by: ['1'] }),
    ).rejects.toEqual(code('TASK_STATE'));
    // Fields an action does not take are refused, not ignored.
    await expect(
      a.update({ task_id: '1', expected_revision: 1, action: 'claim', subject: 'x' }),
    ).rejects.toEqual(code('INVALID_ARGUMENTS', /subject is not used by action claim/));
    await expect(a.update({ task_id: '1', expected_revision: 1, action: 'edit' })).rejects.toEqual(
      code('INVALID_ARGUMENTS'),
    );
    // delete refuses a task others are blocked by, and deleted ids are never reused.
    await lead.create(task('three', { blocked_by: ['1'] }));
    await expect(lead.update({ task_id: '1', expected_revision: 1, action: 'delete' })).rejects.toMatchObject(
      {
        code: 'TASK_HAS_DEPENDENTS',
        data: { dependents: ['3'] },
      },
    );
    const gone = await lead.update({ task_id: '3', expected_revision: 1, action: 'delete' });
    expect(gone).toMatchObject({ task_id: '3', deleted: true });
    await expect(lead.get('3')).rejects.toEqual(code('NOT_FOUND'));
    expect((await lead.create(task('four'))).task_id).toBe('4');
  });

  it('write scopes that leave the workspace or confine nothing are refused', async () => {
    const { lead } = setup();
    for (const scope of ['../etc', '/etc/passwd', 'src/../../x', '.', '/workspace', '**', ''])
      await expect(lead.create(task('x', { write_scopes: [scope] }))).rejects.toEqual(
        code('INVALID_ARGUMENTS'),
      );
  });

  it('pages in id order with an integer cursor, filters before paging, caps limit', async () => {
    const { lead, a } = setup({ maxPage: 3 });
    for (let i = 1; i <= 7; i++) await lead.create(task(`t${i}`));
    await a.update({ task_id: '2', expected_revision: 1, action: 'claim' });
    const first = await lead.list({ status: 'pending', limit: 2 });
    expect(first.tasks.map((t) => t.task_id)).toEqual(['1', '3']);
    expect(first).toMatchObject({ next_cursor: 3, total: 6 });
    const second = await lead.list({ status: 'pending', limit: 100, cursor: first.next_cursor ?? 0 });
    expect(second.tasks.map((t) => t.task_id)).toEqual(['4', '5', '6']);
    const third = await lead.list({ status: 'pending', limit: 100, cursor: second.next_cursor ?? 0 });
    expect(third).toMatchObject({ next_cursor: null });
    expect(third.tasks.map((t) => t.task_id)).toEqual(['7']);
    expect((await lead.list({ owner: 'alice' })).tasks.map((t) => t.task_id)).toEqual(['2']);
    expect((await lead.list({ owner: 'a', status: 'completed' })).total).toBe(0);
  });

  it('limits: board size, subject and description sizes, scopes per task', async () => {
    const { lead } = setup({ maxTasks: 2, maxSubjectChars: 5, maxDescriptionChars: 10, maxScopesPerTask: 1 });
    await expect(lead.create(task('toolong'))).rejects.toEqual(code('LIMIT_EXCEEDED', /subject/));
    await expect(lead.create({ subject: 'a', description: 'x'.repeat(11) })).rejects.toEqual(
      code('LIMIT_EXCEEDED'),
    );
    await expect(lead.create(task('a', { write_scopes: ['a', 'b'] }))).rejects.toEqual(
      code('LIMIT_EXCEEDED'),
    );
    await lead.create(task('a'));
    await lead.create(task('b'));
    await expect(lead.create(task('c'))).rejects.toEqual(code('LIMIT_EXCEEDED', /holds 2 tasks/));
    // A refused create used no id.
    await lead.update({ task_id: '2', expected_revision: 1, action: 'delete' });
    expect((await lead.create(task('c'))).task_id).toBe('3');
  });

  it("tells every change on the lead's log and to onBoardChange; writeBounds is what the owner holds and was granted", async () => {
    const { lead, a, board, changes, store } = setup();
    await lead.create(task('one', { write_scopes: ['src'] }));
    await a.update({ task_id: '1', expected_revision: 1, action: 'claim' });
    expect(changes.map((c) => [c.action, c.by, c.teamId, c.task.status])).toEqual([
      ['create', 'lead', 'lead', 'pending'],
      ['claim', 'a', 'lead', 'in_progress'],
    ]);
    const events = (await store.events.list('lead')).filter((e) => e.type === 'team.task');
    expect(events.map((e) => (e.data as { action: string }).action)).toEqual(['create', 'claim']);
    const grant = { agentId: 'a', own: true, scopes: ['src'] };
    expect(await board.writeBounds('tn_1', 'a')).toEqual({
      held: [{ taskId: '1', subject: 'one', scopes: ['src'] }],
      grants: [grant],
    });
    expect(await board.writeBounds('tn_2', 'a')).toEqual({ held: [], grants: [] });
    await a.update({ task_id: '1', expected_revision: 2, action: 'complete' });
    // The task is done; what the lead let a write stays.
    expect(await board.writeBounds('tn_1', 'a')).toEqual({ held: [], grants: [grant] });
  });

  it("a deleted agent's unfinished tasks go back to pending and unowned", async () => {
    const { lead, a, board, changes } = setup();
    for (const subject of ['held', 'reserved', 'done', 'other']) await lead.create(task(subject));
    await a.update({ task_id: '1', expected_revision: 1, action: 'claim' });
    await lead.update({ task_id: '2', expected_revision: 1, action: 'reassign', owner: 'a' });
    await a.update({ task_id: '3', expected_revision: 1, action: 'claim' });
    await a.update({ task_id: '3', expected_revision: 2, action: 'complete' });
    await lead.update({ task_id: '4', expected_revision: 1, action: 'reassign', owner: 'b' });
    changes.length = 0;
    await board.releaseOwner('a');
    const tasks = (await lead.list({})).tasks.map((t) => [t.task_id, t.status, t.owner, t.revision]);
    expect(tasks).toEqual([
      ['1', 'pending', null, 3],
      ['2', 'pending', null, 3],
      ['3', 'completed', 'a', 3],
      ['4', 'pending', 'b', 2],
    ]);
    expect(changes.map((c) => [c.action, c.by, c.task.task_id])).toEqual([
      ['release', 'a', '1'],
      ['release', 'a', '2'],
    ]);
    expect(await board.writeBounds('tn_1', 'a')).toEqual({ held: [], grants: [] });
  });

  it('survives a reopened store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'board-'));
    try {
      const first = openStore({ path: join(dir, 'store.db') });
      const board = createTeamBoard({ store: first.teamBoards, events: first.events, directory: TEAM });
      await board.forAgent('tn_1', 'lead').create(task('one'));
      await board.forAgent('tn_1', 'a').update({ task_id: '1', expected_revision: 1, action: 'claim' });
      first.close();
      const second = openStore({ path: join(dir, 'store.db') });
      try {
        const again = createTeamBoard({ store: second.teamBoards, events: second.events, directory: TEAM });
        expect(await again.forAgent('tn_1', 'b').get('1')).toMatchObject({ owner: 'a', revision: 2 });
        expect((await again.forAgent('tn_1', 'lead').create(task('two'))).task_id).toBe('2');
      } finally {
        second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
