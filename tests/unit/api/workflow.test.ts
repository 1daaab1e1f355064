// Workflows over the API: an agent created with `subagents: true` sees workflow and ralph, a
// workflow's agent() step shows as a pending `subagent` host request, the client's answer resumes
// the script, and cancelling the call cancels the request. The real isolate host runs the scripts.
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import { registerWorkflowTools } from '../../../host/tools/workflow/index.ts';
import { type Api, type Loose, makeApi } from './harness.ts';
import { readSse } from './sse.ts';

const isolates = createIsolateHost({ workers: 1, prewarm: 1 });
afterAll(() => isolates.close());

let api: Api;
beforeEach(async () => {
  api = await makeApi();
  registerWorkflowTools(api.registry.global, { isolates });
});
afterEach(async () => {
  await api.close();
});

const pendingRequests = async (agentId: string, ms = 5000): Promise<Loose[]> => {
  const end = Date.now() + ms;
  for (;;) {
    const res = await api.request(api.keyA, 'GET', `/v1/agents/${agentId}/requests?state=pending`);
    if (res.json.requests.length > 0) return res.json.requests;
    if (Date.now() > end) throw new Error('timed out waiting for a pending request');
    await new Promise((r) => setTimeout(r, 10));
  }
};

const toolNames = async (agentId: string): Promise<string[]> =>
  (await api.request(api.keyA, 'GET', `/v1/agents/${agentId}/tools`)).json.tools.map(
    (t: { name: string }) => t.name,
  );

describe('workflow over the API', () => {
  it('only agents created with subagents: true see workflow and ralph', async () => {
    const plain = await api.createAgent(api.keyA);
    expect(await toolNames(plain.id)).not.toContain('workflow');
    const res = await api.call(api.keyA, plain.id, [{ id: 'w', name: 'workflow', arguments: {} }]);
    expect(res.json.results[0].error.code).toBe('UNKNOWN_TOOL');
    const minimal = await api.createAgent(api.keyA, { preset: 'minimal', subagents: true });
    expect(await toolNames(minimal.id)).not.toContain('workflow');
    for (const preset of ['standard', 'creator']) {
      const agent = await api.createAgent(api.keyA, { preset, subagents: true });
      expect(await toolNames(agent.id)).toEqual(expect.arrayContaining(['workflow', 'ralph']));
    }
    const denied = await api.createAgent(api.keyA, { subagents: true, restrict: { deny: ['ralph'] } });
    const names = await toolNames(denied.id);
    expect(names).toContain('workflow');
    expect(names).not.toContain('ralph');
  });

  it('an agent() step is a pending subagent request; the answer resumes the script', async () => {
    const agent = await api.createAgent(api.keyA, { subagents: true });
    const calling = api.call(api.keyA, agent.id, [
      {
        id: 'w1',
        name: 'workflow',
        arguments: {
          meta: { name: 'review', description: 'Review once.', phases: [{ title: 'Read', model: 'small' }] },
          args: { topic: 'the store' },
          script:
            'phase("Read"); log("asking"); const r = await agent("Review " + args.topic); return { r };',
        },
      },
    ]);
    const [request] = await pendingRequests(agent.id);
    expect(request).toMatchObject({
      kind: 'subagent',
      callId: 'w1.2',
      payload: { prompt: 'Review the store', phase: 'Read', model: 'small', workflow: 'review' },
    });
    const wrong = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/requests/${request.id}`, {
      allow: true,
    });
    expect(wrong.status).toBe(400);
    const answered = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/requests/${request.id}`, {
      result: 'Looks fine.',
    });
    expect(answered.status).toBe(200);
    const res = await calling;
    expect(res.json.results[0]).toMatchObject({
      ok: true,
      content: [{ type: 'text', text: 'asking\n{\n  "r": "Looks fine."\n}' }],
      value: { logs: ['asking'], phases: ['Read'], value: { r: 'Looks fine.' } },
    });
    // The durable log links the steps to the workflow call.
    const events = (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`)).json.events;
    const steps = events.filter((e: Loose) => e.type === 'tool.call' && e.parentCallId === 'w1');
    expect(steps.map((e: Loose) => e.data.name)).toEqual(['phase', 'agent']);
  });

  it('over SSE, the phase, the subagent request and its step stream as progress before the result', async () => {
    const agent = await api.createAgent(api.keyA, { subagents: true });
    const res = await api.callStream(api.keyA, agent.id, [
      {
        id: 'w1',
        name: 'workflow',
        arguments: {
          meta: { name: 'm', description: 'd' },
          script: 'phase("Go"); return await agent("hi");',
        },
      },
    ]);
    const reading = readSse(res.body as ReadableStream<Uint8Array>);
    const [request] = await pendingRequests(agent.id);
    await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/requests/${request.id}`, { result: 'hello' });
    const messages = await reading;
    expect(messages.at(-1)?.data.results[0]).toMatchObject({
      id: 'w1',
      ok: true,
      content: [{ text: 'hello' }],
    });
    const progress = messages.filter((m) => m.event === 'progress').map((m) => m.data);
    const seen = progress.map((e: Loose) => `${e.type}:${e.data?.name ?? e.callId}`);
    expect(seen).toEqual(expect.arrayContaining(['tool.call:phase', 'tool.call:agent', 'tool.result:agent']));
    expect(progress.some((e: Loose) => e.type.startsWith('request.') && e.callId === request.callId)).toBe(
      true,
    );
  });

  it('a subagent error fails agent(); an uncaught one fails the workflow with the log lines', async () => {
    const agent = await api.createAgent(api.keyA, { subagents: true });
    const calling = api.call(api.keyA, agent.id, [
      {
        id: 'w1',
        name: 'workflow',
        arguments: {
          meta: { name: 'x', description: 'x' },
          script: 'log("one"); await agent("fail, please");',
        },
      },
    ]);
    const [request] = await pendingRequests(agent.id);
    await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/requests/${request.id}`, {
      error: { message: 'the subagent gave up' },
    });
    const result = (await calling).json.results[0];
    expect(result.error.code).toBe('CODE_RUN_FAILED');
    expect(result.content[0].text).toMatch(
      /^Error: workflow failed \(runtime\): ToolError: The subagent failed: the subagent gave up\n.*Captured output:\none$/s,
    );
  });

  it('a client that disconnects cancels the workflow and its pending subagent request', async () => {
    const agent = await api.createAgent(api.keyA, { subagents: true });
    const controller = new AbortController();
    const gone = Promise.resolve(
      api.app.request(`/v1/agents/${agent.id}/calls`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${api.keyA}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          calls: [{ id: 'r1', name: 'ralph', arguments: { objective: 'Never ends.' } }],
        }),
        signal: controller.signal,
      }),
    ).catch(() => undefined);
    const [request] = await pendingRequests(agent.id);
    expect(request.payload.prompt).toContain('Objective: Never ends.');
    controller.abort();
    await gone;
    const end = Date.now() + 5000;
    let state = '';
    while (state !== 'cancelled' && Date.now() < end) {
      state = (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/requests/${request.id}`)).json
        .state;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(state).toBe('cancelled');
  });
});
