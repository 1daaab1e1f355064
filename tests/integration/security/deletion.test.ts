// Deleting an agent whose run_code program is still looping on tools (issue 11: the program kept
// calling tools after the 204, policy-denied calls stopped being DENIED, and a call after the
// delete got a new container that outlived the agent). Real Docker, real isolate host, public API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../../host/store/types.ts';
import { until } from '../../helpers/until.ts';
import { type Harness, type Loose, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ isolateWorkers: 1 });
});
afterAll(() => h?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const containersOf = async (agentId: string) =>
  h.fixture.docker.listContainers({ all: true, filters: { label: [`dsh.agent=${agentId}`] } });

const innerResults = async (agentId: string): Promise<SessionEvent[]> =>
  (await h.server.store.events.list(agentId, { limit: 5000 })).filter(
    (e) => e.type === 'tool.result' && e.parentCallId !== undefined,
  );

describe('deleting an agent while its program runs', () => {
  it('stops the program: no tool runs after the 204, policy stays closed, no container is left', async () => {
    const agentId = await h.agent(h.keyA, { preset: 'code', policy: { deny: ['write'] } });
    const program = `
      for (let i = 0; ; i++) {
        try { await tools.write({ file_path: 'w.txt', content: String(i) }); } catch {}
        try { await tools.bash({ command: 'echo ' + i + ' >> ran.txt', description: 'tick' }); } catch {}
      }`;
    const batch = h.http(h.keyA, 'POST', `/v1/agents/${agentId}/calls`, {
      calls: [{ id: 'p', name: 'run_code', arguments: { code: program, description: 'loop' } }],
    });
    await until(
      async () => (await innerResults(agentId)).filter((e) => (e.data as Loose).name === 'bash').length >= 3,
      {
        what: 'the program to loop',
        timeoutMs: 60_000,
      },
    );
    expect(await containersOf(agentId)).toHaveLength(1);

    const deleted = await h.http(h.keyA, 'DELETE', `/v1/agents/${agentId}`);
    const lastBefore204 = (await h.server.store.events.list(agentId, { limit: 5000 })).at(-1)?.seq ?? 0;
    expect(deleted.status).toBe(204);
    // No container for the agent, now or a little later (a program that kept calling tools made one):
    // an absence, so watching for a while is the check.
    expect(await containersOf(agentId)).toEqual([]);
    await sleep(1500);
    expect(await containersOf(agentId)).toEqual([]);
    const res = await batch;
    expect(res.status).toBe(200);
    expect(res.json.results[0].ok).toBe(false);

    await h.server.store.events.flush();
    const results = await innerResults(agentId);
    const writes = results.filter((e) => (e.data as Loose).name === 'write');
    expect(writes.length).toBeGreaterThan(0);
    // Denied by policy before the delete, and never anything else (no REQUEST_EXPIRED, no run).
    for (const e of writes)
      expect(['DENIED', 'ABORTED_BEFORE_DISPATCH', 'ABORTED']).toContain((e.data as Loose).error?.code);
    // Nothing ran after the 204.
    expect(results.filter((e) => e.seq > lastBefore204 && (e.data as Loose).ok === true)).toEqual([]);
    expect((await h.http(h.keyA, 'GET', `/v1/agents/${agentId}`)).status).toBe(404);
    await sleep(500); // watching for a while: an absence
    expect(await innerResults(agentId)).toHaveLength(results.length); // and no call since
  });
});
