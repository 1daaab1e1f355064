// Pause and resume with replicas (issue 36): the routes are /v1/agents/:id routes like the others,
// so a pause, a resume, the agent's paused state and a call refused with AGENT_PAUSED all work
// through a replica that does not run the agent (it forwards them to the family's owner), and the
// tenant's settings put through one replica hold on the other.
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresMissing } from '../../helpers/postgres.ts';
import { type Cluster, type Replica, startCluster } from './cluster.ts';

const missing = postgresMissing();
const suite = missing === undefined ? describe : describe.skip;

suite(`pause and resume through replicas${missing === undefined ? '' : ` [skipped: ${missing}]`}`, () => {
  let cluster: Cluster;
  let a: Replica;
  let b: Replica;
  beforeAll(async () => {
    cluster = await startCluster(['replica-a', 'replica-b'], 5000);
    [a, b] = cluster.replicas as [Replica, Replica];
  }, 180_000);
  afterAll(async () => {
    await cluster?.close();
  });

  const bash = (command: string) => ({ id: 'c', name: 'bash', arguments: { command, description: 'c' } });
  const running = async (agentId: string): Promise<boolean | undefined> => {
    const [found] = await new Docker().listContainers({
      all: true,
      filters: { label: [`dsh.agent=${agentId}`] },
    });
    return found?.State === 'running';
  };

  it("is served by the agent's owner through any replica", async () => {
    // The settings first, through B: A reads them from the store when it first needs them.
    const put = await cluster.request(b, 'PUT', '/v1/settings', { pause: { onCall: 'refuse' } });
    expect(put.json).toMatchObject({ pause: { idleSeconds: 0, onCall: 'refuse' } });
    const agent = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    // A runs the family (its first call went there).
    const first = await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [bash('echo kept > /workspace/k.txt')],
    });
    expect(first.json.results[0]).toMatchObject({ ok: true });

    const paused = await cluster.request(b, 'POST', `/v1/agents/${agent.id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.json).toMatchObject({ agentId: agent.id, paused: true, pause: { mode: 'stop' } });
    expect(await running(agent.id)).toBe(false);
    for (const via of [a, b])
      expect((await cluster.request(via, 'GET', `/v1/agents/${agent.id}`)).json.state.sandbox).toBe('paused');

    const refused = await cluster.request(b, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [bash('cat /workspace/k.txt')],
    });
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe('AGENT_PAUSED');

    expect((await cluster.request(b, 'POST', `/v1/agents/${agent.id}/resume`)).json).toEqual({
      agentId: agent.id,
      paused: false,
    });
    expect(await running(agent.id)).toBe(true);
    const again = await cluster.request(b, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [bash('cat /workspace/k.txt')],
    });
    expect(JSON.stringify(again.json.results[0].content)).toContain('kept');
  });
});
