// Checkpoints with replicas (issue 36): checkpoints are files of the data directory of the replica
// that took them (host/agents/checkpoints/store.ts), so after a takeover the new owner has none of
// the older ones: a rollback to one answers 404 CHECKPOINT_NOT_FOUND saying checkpoints stay with
// the replica that took them, and changes nothing; the former owner, once it learns the family
// moved, drops its copy (nothing stale is left to come back to); the new owner's own checkpoints
// roll back as anywhere.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresMissing } from '../../helpers/postgres.ts';
import { until } from '../../helpers/until.ts';
import { type Cluster, type Replica, startCluster } from './cluster.ts';

const missing = postgresMissing();
const suite = missing === undefined ? describe : describe.skip;
const LEASE_MS = 3000;

suite(`checkpoints through replicas${missing === undefined ? '' : ` [skipped: ${missing}]`}`, () => {
  let cluster: Cluster;
  let a: Replica;
  let b: Replica;
  beforeAll(async () => {
    cluster = await startCluster(['ckpt-a', 'ckpt-b'], LEASE_MS);
    [a, b] = cluster.replicas as [Replica, Replica];
  }, 180_000);
  afterAll(async () => {
    a?.child.kill('SIGCONT');
    await cluster?.close();
  });

  const write = (id: string, content: string) => ({
    id,
    name: 'write',
    arguments: { file_path: 'a.txt', content },
  });
  const read = async (via: Replica, agentId: string): Promise<string> => {
    const res = await fetch(`${via.url}/v1/agents/${agentId}/files?path=a.txt`, {
      headers: { Authorization: `Bearer ${cluster.key}` },
    });
    expect(res.status).toBe(200);
    return res.text();
  };

  it('a takeover leaves the older checkpoints behind: CHECKPOINT_NOT_FOUND, saying why', {
    timeout: 180_000,
  }, async () => {
    const agent = (await cluster.request(a, 'POST', '/v1/agents', {})).json;
    const first = await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [write('w1', 'one')],
    });
    expect(first.json.results[0]).toMatchObject({ ok: true });
    await cluster.request(a, 'POST', `/v1/agents/${agent.id}/calls`, { calls: [write('w2', 'two')] });
    // Through B, the owner A answers: its checkpoints.
    const listed = await cluster.request(b, 'GET', `/v1/agents/${agent.id}/checkpoints`);
    expect(listed.json.checkpoints.map((c: { callId: string }) => c.callId)).toEqual(['w1', 'w2']);
    const folder = join(a.dataDir, 'checkpoints', agent.id);
    expect(existsSync(folder)).toBe(true);

    a.child.kill('SIGSTOP');
    // B takes the family once A's lease ran out (503s until then, as a client is told to retry).
    let last = '';
    const refused = await until(
      async () => {
        const r = await cluster.request(b, 'POST', `/v1/agents/${agent.id}/rollback`, { callId: 'w1' });
        last = `${r.status} ${JSON.stringify(r.json)}`;
        return r.status === 503 ? undefined : r;
      },
      { what: 'B taking the family over', timeoutMs: 60_000, intervalMs: 250 },
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\nlast answer: ${last}\nB:\n${b.lines.slice(-30).join('\n')}`);
    });
    expect(refused.status).toBe(404);
    expect(refused.json.error.code).toBe('CHECKPOINT_NOT_FOUND');
    expect(refused.json.error.message).toMatch(/stay with the replica that took them/);
    expect(await read(b, agent.id)).toBe('two');
    expect((await cluster.request(b, 'GET', `/v1/agents/${agent.id}/checkpoints`)).json.checkpoints).toEqual(
      [],
    );

    // A, resumed, learns it lost the family and drops its copy.
    a.child.kill('SIGCONT');
    await until(() => a.lines.some((line) => line.includes(`family ${agent.id} is run by another replica`)), {
      what: 'A telling it lost the family',
      timeoutMs: 30_000,
    });
    await until(() => !existsSync(folder), { what: "A dropping the agent's checkpoints", timeoutMs: 30_000 });

    // The new owner's own checkpoints roll back as anywhere.
    await cluster.request(b, 'POST', `/v1/agents/${agent.id}/calls`, { calls: [write('w3', 'three')] });
    const back = await cluster.request(b, 'POST', `/v1/agents/${agent.id}/rollback`, { callId: 'w3' });
    expect(back.status, JSON.stringify(back.json)).toBe(200);
    expect(await read(b, agent.id)).toBe('two');
    expect(existsSync(join(b.dataDir, 'checkpoints', agent.id))).toBe(true);
  });
});
