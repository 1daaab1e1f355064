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
