// Deleting an agent while its tenant's request slots are all taken (adversarial pass on deletion):
// DELETE is how a tenant stops what it started, and it answered 429 while the calls it should stop
// held every slot (12 calls and 12 deletes at a concurrency of 16: 7 deletes refused, 7 containers
// kept running). Real Docker, public API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { type Harness, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ config: { tenantConcurrency: 2 } });
});
afterAll(() => h?.close());

describe('deleting agents whose calls hold every request slot of the tenant', () => {
  it('answers 204 and stops the calls', async () => {
    const agents = [await h.agent(h.keyA), await h.agent(h.keyA)];
    await Promise.all(agents.map((a) => h.bash(h.keyA, a, 'true'))); // both sandboxes exist
    const calls = agents.map((a) =>
      h.http(h.keyA, 'POST', `/v1/agents/${a}/calls`, {
        calls: [{ id: 'c', name: 'bash', arguments: { command: 'sleep 60', description: 'hold' } }],
      }),
    );
    // Every slot is taken once both calls are in.
    await until(async () => (await h.http(h.keyA, 'GET', '/v1/agents')).status === 429, {
      what: 'both calls to hold a slot',
    });
    for (const a of agents) expect((await h.http(h.keyA, 'DELETE', `/v1/agents/${a}`)).status).toBe(204);
    for (const res of await Promise.all(calls)) expect(res.json.results[0].ok).toBe(false);
    for (const a of agents)
      expect(
        await h.fixture.docker.listContainers({ all: true, filters: { label: [`dsh.agent=${a}`] } }),
      ).toEqual([]);
  }, 60_000);
});
