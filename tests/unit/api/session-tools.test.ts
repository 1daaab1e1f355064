// Issue 15, the session tools through the public API: todo_write, the goal tools, plan mode with
// exit_plan_mode, and ask_user_question, each called with seed 000's examples verbatim; their state
// read back over HTTP and announced on the session's event stream.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { type Api, type Loose, makeApi } from './harness.ts';

// Seed 000's examples, verbatim.
const TODOS = {
  todos: [
    { content: 'Inspect the implementation', status: 'completed' },
    { content: 'Implement the change', status: 'in_progress' },
    { content: 'Run focused tests', status: 'pending' },
  ],
};
const CREATE_GOAL = {
  objective: 'Upgrade authentication without breaking existing sessions',
  max_goal_rounds: 12,
};
const UPDATE_GOAL = {
  goal_id: 'goal-123',
  revision: 4,
  action: 'blocked',
  blocked_reason: 'The external identity provider is unavailable.',
};
const PLAN = {
  plan: '# Authentication upgrade\n\n1. Update the provider adapter.\n2. Add migration coverage.\n3. Run the authentication E2E suite.',
};
const QUESTIONS = {
  questions: [
    {
      id: 'database',
      header: 'Database',
      question: 'Which database should the deployment use?',
      options: [
        { label: 'SQLite (Recommended)', description: 'Simplest single-host deployment.' },
        { label: 'PostgreSQL', description: 'Better fit for concurrent multi-host access.' },
      ],
    },
  ],
};

let api: Api;
let agentId: string;
beforeEach(async () => {
  api = await makeApi();
  agentId = (await api.createAgent(api.keyA)).id;
});
afterEach(async () => {
  await api.close();
});

/** One call through POST /calls; its result. */
const run = async (name: string, args: unknown, id = name): Promise<Loose> => {
  const res = await api.call(api.keyA, agentId, [{ id, name, arguments: args }]);
  expect(res.status).toBe(200);
  return res.json.results[0];
};
const get = async (path: string): Promise<Loose> =>
  (await api.request(api.keyA, 'GET', `/v1/agents/${agentId}${path}`)).json;
const eventsOf = async (type: string): Promise<Loose[]> =>
  (await get('/events')).events.filter((e: Loose) => e.type === type);
const pending = (kind: string) =>
  until(async () => (await get('/requests?state=pending')).requests.find((r: Loose) => r.kind === kind), {
    what: `a pending ${kind} request`,
  });
const answer = (requestId: string, body: unknown) =>
  api.request(api.keyA, 'POST', `/v1/agents/${agentId}/requests/${requestId}`, body);

it('/openapi.json describes the session routes', async () => {
  const { paths } = (await api.request(undefined, 'GET', '/openapi.json')).json;
  expect(Object.keys(paths)).toEqual(
    expect.arrayContaining(['/v1/agents/{id}/todos', '/v1/agents/{id}/goal', '/v1/agents/{id}/plan-mode']),
  );
  expect(paths['/v1/agents/{id}/plan-mode'].put.requestBody.content['application/json'].schema).toMatchObject(
    {
      properties: { planMode: { type: 'boolean' } },
    },
  );
});

describe('todo_write', () => {
  it('replaces the whole list, readable at GET /todos and announced as session.todos', async () => {
    expect(await get('/todos')).toEqual({ todos: [] });
    const result = await run('todo_write', TODOS);
    expect(result.ok).toBe(true);
    expect(result.value).toEqual(TODOS);
    expect(result.content[0].text).toBe(
      '[x] Inspect the implementation\n[~] Implement the change\n[ ] Run focused tests',
    );
    expect(await get('/todos')).toEqual(TODOS);
    // Not a partial update: the next call's list is the whole list.
    await run('todo_write', { todos: [{ content: 'Ship it', status: 'pending' }] });
    expect(await get('/todos')).toEqual({ todos: [{ content: 'Ship it', status: 'pending' }] });
    expect((await eventsOf('session.todos')).map((e) => e.data.todos.length)).toEqual([3, 1]);
  });

  it('refuses a status outside the seed enum', async () => {
    const result = await run('todo_write', { todos: [{ content: 'x', status: 'done' }] });
    expect(result.error.code).toBe('INVALID_ARGUMENTS');
  });
});

describe('goals', () => {
  it('create_goal makes the one current goal: active, revision 1, usage in rounds; GET /goal and get_goal read it', async () => {
    expect(await get('/goal')).toEqual({ goal: null });
    expect((await run('get_goal', {})).value).toBeNull();
    const created = await run('create_goal', CREATE_GOAL);
    expect(created.value).toMatchObject({
      ...CREATE_GOAL,
      state: 'active',
      revision: 1,
      usage: { rounds: 0 },
    });
    expect((await get('/goal')).goal).toEqual(created.value);
    // The get_goal batch was one round of the active goal.
    expect((await run('get_goal', {})).value).toMatchObject({
      goal_id: created.value.goal_id,
      usage: { rounds: 1 },
    });
    // One current goal: another is refused until this one is completed.
    expect((await run('create_goal', { objective: 'Another' })).error.code).toBe('CONFLICT');
    expect((await eventsOf('session.goal')).length).toBe(1);
  });

  it("update_goal: the seed's example names no current goal; a stale revision is refused with the current one", async () => {
    const goal = (await run('create_goal', CREATE_GOAL)).value;
    expect((await run('update_goal', UPDATE_GOAL)).error.code).toBe('NOT_FOUND');
    const stale = await run('update_goal', { ...UPDATE_GOAL, goal_id: goal.goal_id });
    expect(stale.ok).toBe(false);
    expect(stale.error).toMatchObject({
      code: 'REVISION_CONFLICT',
      data: { currentRevision: 1, goal_id: goal.goal_id },
    });
    expect(stale.error.message).toContain('the current revision is 1');
    const blocked = await run('update_goal', { ...UPDATE_GOAL, goal_id: goal.goal_id, revision: 1 });
    expect(blocked.value).toMatchObject({
      state: 'blocked',
      revision: 2,
      blocked_reason: 'The external identity provider is unavailable.',
    });
    // The revision just used is stale now.
    expect(
      (await run('update_goal', { goal_id: goal.goal_id, revision: 1, action: 'resume' })).error.code,
    ).toBe('REVISION_CONFLICT');
    const resumed = await run('update_goal', { goal_id: goal.goal_id, revision: 2, action: 'resume' });
    expect(resumed.value).toMatchObject({ state: 'active', revision: 3 });
    expect(resumed.value.blocked_reason).toBeUndefined();
  });

  it('blocked needs blocked_reason; a completed goal changes no more and can be replaced', async () => {
    const goal = (await run('create_goal', { objective: 'Ship' })).value;
    const noReason = await run('update_goal', { goal_id: goal.goal_id, revision: 1, action: 'blocked' });
    expect(noReason.error.code).toBe('INVALID_ARGUMENTS');
    expect(noReason.error.message).toContain('blocked_reason');
    await run('update_goal', { goal_id: goal.goal_id, revision: 1, action: 'complete' });
    expect(
      (await run('update_goal', { goal_id: goal.goal_id, revision: 2, action: 'resume' })).error.code,
    ).toBe('CONFLICT');
    expect((await run('create_goal', { objective: 'Next' })).value).toMatchObject({
      objective: 'Next',
      revision: 1,
    });
  });

  it('counts one round per call batch while active, and blocks the goal once max_goal_rounds are used', async () => {
    const goal = (await run('create_goal', { objective: 'Two rounds', max_goal_rounds: 2 })).value;
    await run('todo_write', { todos: [] });
    await run('todo_write', { todos: [] });
    expect((await get('/goal')).goal).toMatchObject({ state: 'active', usage: { rounds: 2 }, revision: 1 });
    await run('todo_write', { todos: [] });
    const after = (await get('/goal')).goal;
    expect(after).toMatchObject({
      goal_id: goal.goal_id,
      state: 'blocked',
      usage: { rounds: 2 },
      revision: 2,
    });
    expect(after.blocked_reason).toContain('max_goal_rounds');
    // Blocked goals use no rounds; raised and resumed it counts again, paused it stops.
    await run('update_goal', { goal_id: goal.goal_id, revision: 2, action: 'edit', max_goal_rounds: 5 });
    await run('update_goal', { goal_id: goal.goal_id, revision: 3, action: 'resume' });
    expect((await get('/goal')).goal).toMatchObject({ state: 'active', usage: { rounds: 2 }, revision: 4 });
    await run('update_goal', { goal_id: goal.goal_id, revision: 4, action: 'pause' });
    await run('get_goal', {});
    expect((await get('/goal')).goal).toMatchObject({ state: 'paused', usage: { rounds: 3 }, revision: 5 });
  });
});

describe('plan mode', () => {
  it('while on, write is refused (PLAN_MODE) and read runs; an approved exit_plan_mode plan ends it', async () => {
    await run('write', { file_path: 'a.txt', content: 'before' });
    const on = await api.request(api.keyA, 'PUT', `/v1/agents/${agentId}/plan-mode`, { planMode: true });
    expect(on.json).toEqual({ planMode: true });
    const refused = await run('write', { file_path: 'a.txt', content: 'during' });
    expect(refused.ok).toBe(false);
    expect(refused.error.code).toBe('PLAN_MODE');
    expect(refused.content[0].text).toMatch(/^Error: Plan mode is on: write .*exit_plan_mode/);
    expect((await run('bash', { command: 'ls', description: 'list' })).error.code).toBe('PLAN_MODE');
    expect((await run('read', { file_path: 'a.txt' })).ok).toBe(true);

    const submitted = api.call(api.keyA, agentId, [{ id: 'p1', name: 'exit_plan_mode', arguments: PLAN }]);
    const review = await pending('plan_review');
    expect(review.payload).toEqual(PLAN);
    // Sent back: plan mode stays on.
    expect((await answer(review.id, { allow: false, reason: 'Add a rollback step.' })).status).toBe(200);
    const rejected = (await submitted).json.results[0];
    expect(rejected.value).toEqual({ approved: false, feedback: 'Add a rollback step.' });
    expect(await get('/plan-mode')).toEqual({ planMode: true });

    const resubmitted = api.call(api.keyA, agentId, [{ id: 'p2', name: 'exit_plan_mode', arguments: PLAN }]);
    await answer((await pending('plan_review')).id, { allow: true });
    expect((await resubmitted).json.results[0].value).toEqual({ approved: true });
    expect(await get('/plan-mode')).toEqual({ planMode: false });
    expect((await run('write', { file_path: 'a.txt', content: 'after' })).ok).toBe(true);
    expect((await eventsOf('session.plan_mode')).map((e) => e.data)).toEqual([
      { on: true, by: 'client' },
      { on: false, by: 'plan_approved' },
    ]);
  });

  it('exit_plan_mode outside plan mode is refused with a clear error, and no request is made', async () => {
    const result = await run('exit_plan_mode', PLAN);
    expect(result.error.code).toBe('CONFLICT');
    expect(result.error.message).toContain('Plan mode is off');
    expect((await get('/requests')).requests).toEqual([]);
  });

  it("an agent's policy can start it in plan mode; the client turns it off", async () => {
    const planned = await api.createAgent(api.keyA, { policy: { planMode: true } });
    agentId = planned.id;
    expect(await get('/plan-mode')).toEqual({ planMode: true });
    expect((await run('edit', { file_path: 'a', old_string: 'x', new_string: 'y' })).error.code).toBe(
      'PLAN_MODE',
    );
    await api.request(api.keyA, 'PUT', `/v1/agents/${agentId}/plan-mode`, { planMode: false });
    expect((await run('write', { file_path: 'a', content: 'x' })).ok).toBe(true);
  });

  it('a remote tool runs in plan mode only when declared readOnly', async () => {
    const tool = (name: string, readOnly: boolean) => ({
      name,
      description: 'client tool',
      parameters: { type: 'object' },
      readOnly,
    });
    await api.request(api.keyA, 'POST', `/v1/agents/${agentId}/remote-tools`, {
      tools: [tool('lookup', true), tool('deploy', false)],
    });
    await api.request(api.keyA, 'PUT', `/v1/agents/${agentId}/plan-mode`, { planMode: true });
    expect((await run('deploy', {})).error.code).toBe('PLAN_MODE');
    const lookup = api.call(api.keyA, agentId, [{ id: 'l1', name: 'lookup', arguments: {} }]);
    await answer((await pending('remote_tool')).id, { result: 'found' });
    expect((await lookup).json.results[0].value).toBe('found');
  });
});

describe('ask_user_question', () => {
  it('asks as a user_question request with the seed Question shape; the answer is the result', async () => {
    const asked = api.call(api.keyA, agentId, [
      { id: 'q1', name: 'ask_user_question', arguments: QUESTIONS },
    ]);
    const request = await pending('user_question');
    expect(request).toMatchObject({ callId: 'q1', payload: QUESTIONS });
    // An approval's answer does not fit a question.
    expect((await answer(request.id, { allow: true })).status).toBe(400);
    expect((await answer(request.id, { answers: { database: 'SQLite (Recommended)' } })).status).toBe(200);
    const result = (await asked).json.results[0];
    expect(result.value).toEqual({
      answers: [
        {
          id: 'database',
          question: 'Which database should the deployment use?',
          answer: ['SQLite (Recommended)'],
        },
      ],
    });
    expect(result.content[0].text).toBe('Which database should the deployment use?\n→ SQLite (Recommended)');
  });

  it('an unanswered question expires: the call fails REQUEST_EXPIRED and a late answer is refused', async () => {
    await api.close();
    api = await makeApi({}, { agents: { questionTtlMs: 150 } });
    agentId = (await api.createAgent(api.keyA)).id;
    const result = await run('ask_user_question', QUESTIONS);
    expect(result.error.code).toBe('REQUEST_EXPIRED');
    const [request] = (await get('/requests')).requests;
    expect(request.state).toBe('expired');
    expect((await answer(request.id, { answers: { database: 'PostgreSQL' } })).status).toBe(410);
  });

  it('a cancelled question fails the call ABORTED', async () => {
    const asked = api.call(api.keyA, agentId, [
      { id: 'q1', name: 'ask_user_question', arguments: QUESTIONS },
    ]);
    api.store.requests.cancel((await pending('user_question')).id);
    expect((await asked).json.results[0].error.code).toBe('ABORTED');
  });
});
