// POST /v1/agents/:id/steps (issue 17 §1): the client describes the tools and calls against the same
// resolved set. A tool registered or replaced after the step is UNKNOWN_TOOL in the step's batches;
// an unknown, expired or another agent's step is 404 STEP_NOT_FOUND.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Api, makeApi } from './harness.ts';

let api: Api;
beforeEach(async () => {
  api = await makeApi();
});
afterEach(async () => {
  await api.close();
});

const remoteTool = (name: string, description = 'Asks the client') => ({
  name,
  description,
  parameters: { type: 'object', properties: {} },
});

const callsOn = (agentId: string, step: string, calls: unknown[]) =>
  api.request(api.keyA, 'POST', `/v1/agents/${agentId}/calls`, { step, calls });

describe('steps', () => {
  it('a step shows what GET /tools shows, and its calls run against exactly that set', async () => {
    const agent = await api.createAgent(api.keyA);
    const before = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/remote-tools`, {
      tools: [remoteTool('client_a')],
    });
    expect(before.status).toBe(200);
    const step = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/steps`);
    expect(step.status).toBe(201);
    const described = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/tools`);
    expect({ mode: step.json.mode, tools: step.json.tools }).toEqual(described.json);
    expect(step.json.stepId).toMatch(/^step_/);
    expect(step.json.expiresAt).toBeGreaterThan(Date.now());

    // Registered after the step (client_b) and replaced after it (client_a): neither slips in.
    await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/remote-tools`, {
      tools: [remoteTool('client_a', 'Replaced'), remoteTool('client_b')],
    });
    const res = await callsOn(agent.id, step.json.stepId, [
      { id: 'w', name: 'write', arguments: { file_path: 'a.txt', content: 'x' } },
      { id: 'a', name: 'client_a', arguments: {} },
      { id: 'b', name: 'client_b', arguments: {} },
    ]);
    expect(res.status).toBe(200);
    expect(res.json.results).toMatchObject([
      { id: 'w', ok: true },
      { id: 'a', ok: false, error: { code: 'UNKNOWN_TOOL' } },
      { id: 'b', ok: false, error: { code: 'UNKNOWN_TOOL' } },
    ]);
    expect(res.json.results[2].error.message).toContain("not in this step's tool set");
    // The same step serves another batch (a retry).
    const again = await callsOn(agent.id, step.json.stepId, [
      { id: 'r', name: 'read', arguments: { file_path: 'a.txt' } },
    ]);
    expect(again.json.results[0]).toMatchObject({ id: 'r', ok: true });
  });

  it("an unknown step, or another agent's, is 404 STEP_NOT_FOUND", async () => {
    const agent = await api.createAgent(api.keyA);
    const other = await api.createAgent(api.keyA);
    const step = await api.request(api.keyA, 'POST', `/v1/agents/${other.id}/steps`);
    for (const id of ['step_unknown', step.json.stepId]) {
      const res = await callsOn(agent.id, id, [{ id: 'r', name: 'read', arguments: { file_path: 'a' } }]);
      expect(res.status).toBe(404);
      expect(res.json.error.code).toBe('STEP_NOT_FOUND');
    }
    const foreign = await api.request(api.keyB, 'POST', `/v1/agents/${agent.id}/steps`);
    expect(foreign.status).toBe(404);
  });

  it('/openapi.json describes the step route and the step of a call batch', async () => {
    const { paths } = (await api.request(undefined, 'GET', '/openapi.json')).json;
    expect(paths['/v1/agents/{id}/steps'].post.responses['201']).toBeDefined();
    const body = paths['/v1/agents/{id}/calls'].post.requestBody.content['application/json'].schema;
    expect(JSON.stringify(body)).toContain('step');
  });
});
