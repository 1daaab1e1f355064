// After a restart, resume() settles or watches every run the last process left running. One run
// the store fails to settle (a transient error, a row it refuses) must not leave the runs after it
// unwatched: their children would stay `running` and their parents' waits unanswered.
import { afterEach, expect, it } from 'vitest';
import { openStore, type Store } from '../../../host/store/index.ts';
import { DEFAULT_CHILD_LIMITS } from '../../../host/teams/limits.ts';
import { createMailboxes } from '../../../host/teams/mailboxes.ts';
import { createRuns } from '../../../host/teams/runs.ts';

let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

it('settles and watches the other runs when one of them fails', async () => {
  store = openStore({ path: ':memory:' });
  const { teams, requests } = store;
  const session = 'agt_parent';
  const answered = async () => {
    const request = await requests.create({
      sessionId: session,
      kind: 'subagent',
      callId: 'c',
      payload: {},
      expiresAt: Date.now() + 60_000,
    });
    await requests.answer(request.id, { result: 'done' });
    return request.id;
  };
  for (const agentId of ['agt_a', 'agt_b']) {
    await teams.putRun({
      agentId,
      tenantId: 't',
      parentId: session,
      description: 'd',
      status: 'running',
      requestId: await answered(),
    });
  }
  const settleRun = teams.settleRun;
  teams.settleRun = (agentId, requestId, outcome) =>
    agentId === 'agt_a'
      ? Promise.reject(new Error('the store refused it'))
      : settleRun(agentId, requestId, outcome);
  const runs = createRuns({
    agents: store.agents,
    events: store.events,
    requests,
    teams,
    mailboxes: createMailboxes({ teams, events: store.events, limitsOf: () => DEFAULT_CHILD_LIMITS }),
  });
  try {
    await expect(runs.resume()).rejects.toThrow('the store refused it');
    expect((await teams.run('agt_b'))?.status).toBe('completed');
    expect((await teams.run('agt_a'))?.status).toBe('running');
  } finally {
    runs.close();
  }
});

it("with replicas, resumes only the runs of the families it is given (another replica's parents are not written)", async () => {
  store = openStore({ path: ':memory:' });
  const { teams, requests } = store;
  const pending = async (sessionId: string) =>
    (
      await requests.create({
        sessionId,
        kind: 'subagent',
        callId: 'c',
        payload: {},
        expiresAt: Date.now() + 60_000,
      })
    ).id;
  // Two families: agt_p1 with its child agt_c1 (answered meanwhile), agt_p2 with agt_c2 (pending).
  const answered = await pending('agt_p1');
  await requests.answer(answered, { result: 'done' });
  await teams.putRun({
    agentId: 'agt_c1',
    tenantId: 't',
    parentId: 'agt_p1',
    description: 'd',
    status: 'running',
    requestId: answered,
  });
  const other = await pending('agt_p2');
  await teams.putRun({
    agentId: 'agt_c2',
    tenantId: 't',
    parentId: 'agt_p2',
    description: 'd',
    status: 'running',
    requestId: other,
  });
  const runs = createRuns({
    agents: store.agents,
    events: store.events,
    requests,
    teams,
    mailboxes: createMailboxes({ teams, events: store.events, limitsOf: () => DEFAULT_CHILD_LIMITS }),
  });
  try {
    expect(await runs.resume(new Set(['agt_p2', 'agt_c2']))).toBe(1);
    // The other family's answered run is left for the replica that takes it over.
    expect((await teams.run('agt_c1'))?.status).toBe('running');
    expect(await runs.resume(new Set(['agt_p1', 'agt_c1']))).toBe(0);
    expect((await teams.run('agt_c1'))?.status).toBe('completed');
    expect((await teams.run('agt_c2'))?.status).toBe('running');
  } finally {
    runs.close();
  }
});
