// The team_task_* tools as the model meets them: offered only to agents created with teams: true,
// short text it reads (one line per task, the next cursor named) beside the structured value, and
// a stable code with an actionable message when an update is stale.
import { afterAll, describe, expect, it } from 'vitest';
import type { ToolCall, ToolResult } from '../../../../host/tools/index.ts';
import { composedService } from '../../../helpers/composed.ts';

const { agents, tenant, close, teamBoard } = await composedService();
afterAll(close);

const textOf = (r: ToolResult | undefined) =>
  (r?.content ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('');

describe('the team_task_* tools', () => {
  it('are offered only with teams: true, and answer text and value', async () => {
    const plain = await agents.create(tenant, { preset: 'standard' });
    expect((await agents.tools(plain)).tools.map((t) => t.name)).not.toContain('team_task_create');
    const agent = await agents.create(tenant, { preset: 'standard', teams: true });
    let n = 0;
    const call = async (name: string, args: Record<string, unknown>) => {
      const calls: ToolCall[] = [{ id: `c${++n}`, name, arguments: args }];
      return (await agents.call(agent, calls, { signal: new AbortController().signal }))[0];
    };
    await call('team_task_create', { subject: 'One', description: 'first' });
    await call('team_task_create', {
      subject: 'Two',
      description: 'second',
      blocked_by: ['1'],
      write_scopes: ['src'],
    });
    await call('team_task_create', { subject: 'Three', description: 'third' });

    const page = await call('team_task_list', { limit: 2 });
    expect(textOf(page)).toBe(
      [
        '3 tasks match:',
        '#1 [pending, ready] One — unowned; rev 1',
        '#2 [pending, not ready] Two — unowned; blocked by 1 (open: 1); scopes src; rev 1',
        'More: call again with cursor 2.',
      ].join('\n'),
    );
    expect(page?.value).toMatchObject({ next_cursor: 2, total: 3 });
    expect(textOf(await call('team_task_get', { task_id: '2' }))).toBe(
      '#2 [pending, not ready] Two — unowned; blocked by 1 (open: 1); scopes src; rev 1\nsecond',
    );

    const stale = await call('team_task_update', { task_id: '1', expected_revision: 3, action: 'claim' });
    expect(stale?.error?.code).toBe('REVISION_CONFLICT');
    expect(textOf(stale)).toMatch(/^Error: Task 1 is at revision 1, not 3: .*team_task_get/);
    const bad = await call('team_task_update', { task_id: '1', expected_revision: 1, action: 'finish' });
    expect(bad?.error?.code).toBe('INVALID_ARGUMENTS');
    const cycle = await call('team_task_update', {
      task_id: '1',
      expected_revision: 1,
      action: 'set_dependencies',
      blocked_by: ['2'],
    });
    expect(textOf(cycle)).toMatch(/closes the cycle 1 → 2 → 1/);
  });

  it('deleting an agent releases the tasks it held (the service wires the board to deletions)', async () => {
    const agent = await agents.create(tenant, { preset: 'standard', teams: true });
    const run = (name: string, args: Record<string, unknown>) =>
      agents.call(agent, [{ id: name, name, arguments: args }], { signal: new AbortController().signal });
    await run('team_task_create', { subject: 'Held', description: 'then deleted' });
    await run('team_task_update', { task_id: '1', expected_revision: 1, action: 'claim' });
    const released = new Promise((resolve) => teamBoard?.onBoardChange(resolve));
    await agents.delete(tenant, agent.id);
    expect(await released).toMatchObject({
      action: 'release',
      by: agent.id,
      task: { status: 'pending', owner: null },
    });
  });
});
