// The task board resolves teams through the teams room's directory: a teammate spawned with
// spawn_teammate works on its lead's board (it sees and claims the lead's task, and a task it
// creates lands there), while an agent outside the team has a board of its own.
import { afterAll, expect, it } from 'vitest';
import type { Agent } from '../../../host/agents/types.ts';
import type { ToolResult } from '../../../host/tools/types.ts';
import { composedService } from '../../helpers/composed.ts';
import { until } from '../../helpers/until.ts';

const service = await composedService();
afterAll(() => service.close());

let n = 0;
const call = async (agent: Agent, name: string, args: unknown): Promise<ToolResult> => {
  const [result] = await service.agents.call(agent, [{ id: `c${++n}`, name, arguments: args }], {
    signal: new AbortController().signal,
  });
  return result as ToolResult;
};
const value = async (agent: Agent, name: string, args: unknown) => {
  const result = await call(agent, name, args);
  expect(result.ok, JSON.stringify(result.error)).toBe(true);
  return result.value as { [key: string]: unknown };
};

it("a teammate works on its lead's board; an outsider has its own", async () => {
  const { agents, tenant } = service;
  const lead = await agents.create(tenant, { teams: true });
  const spawned = await value(lead, 'spawn_teammate', { name: 'ann', description: 'd', prompt: 'p' });
  const ann = await agents.get(tenant, spawned.agent_id as string);
  const task = await value(lead, 'team_task_create', { subject: 'Write docs', description: 'All of them' });
  const seen = await value(ann, 'team_task_list', {});
  expect(JSON.stringify(seen)).toContain('Write docs');
  const id = task.task_id as string;
  expect(
    await value(ann, 'team_task_update', { task_id: id, expected_revision: 1, action: 'claim' }),
  ).toMatchObject({
    owner: ann.id,
    status: 'in_progress',
  });
  await value(ann, 'team_task_create', { subject: 'Found a bug', description: 'In the parser' });
  expect(JSON.stringify(await value(lead, 'team_task_list', {}))).toContain('Found a bug');

  const outsider = await agents.create(tenant, { teams: true });
  expect(JSON.stringify(await value(outsider, 'team_task_list', {}))).not.toContain('Write docs');
});

it('a task claimed by a teammate while it is deleted goes back to the team', async () => {
  // The claim's write is held back until the teammate's deletion answered (its tasks released).
  const { agents, tenant, store } = service;
  const lead = await agents.create(tenant, { teams: true });
  const spawned = await value(lead, 'spawn_teammate', { name: 'bo', description: 'd', prompt: 'p' });
  const bo = await agents.get(tenant, spawned.agent_id as string);
  const task = await value(lead, 'team_task_create', { subject: 'Fix it', description: 'All of it' });
  const boards = store.teamBoards!;
  const write = boards.write.bind(boards);
  const { promise: writing, resolve: reached } = Promise.withResolvers<void>();
  const { promise: released, resolve: release } = Promise.withResolvers<void>();
  let stored: Promise<unknown> | undefined;
  boards.write = ((tenantId, teamId, fn) => {
    if (stored !== undefined || teamId !== lead.id) return write(tenantId, teamId, fn);
    reached();
    stored = released.then(() => write(tenantId, teamId, fn));
    return stored;
  }) as typeof boards.write;
  const claimed = call(bo, 'team_task_update', {
    task_id: task.task_id,
    expected_revision: 1,
    action: 'claim',
  });
  await writing;
  await agents.delete(tenant, bo.id);
  release();
  expect((await claimed).ok).toBe(false);
  await stored;
  await until(
    async () => {
      const listed = (await value(lead, 'team_task_get', { task_id: task.task_id })) as { owner?: unknown };
      return listed.owner === null;
    },
    { what: 'the late claim released' },
  );
});
