import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { type Api, makeApi } from './harness.ts';
import { readSse } from './sse.ts';

let api: Api;
beforeEach(async () => {
  api = await makeApi();
});
afterEach(async () => {
  await api.close();
});

const waitFor = async <T>(read: () => Promise<T | undefined>, ms = 5000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
};

const pending = (agentId: string) => async () => {
  const res = await api.request(api.keyA, 'GET', `/v1/agents/${agentId}/requests?state=pending`);
  return res.json.requests.length > 0 ? res.json.requests : undefined;
};

describe('calls', () => {
  it('runs a batch through the pipeline and returns results in call order', async () => {
    const agent = await api.createAgent(api.keyA);
    const res = await api.call(api.keyA, agent.id, [
      { id: 'w', name: 'write', arguments: { file_path: 'src/a.ts', content: 'const enabled = false\n' } },
      {
        id: 'e',
        name: 'edit',
        arguments: { file_path: 'src/a.ts', old_string: 'false', new_string: 'true' },
      },
      { id: 'r', name: 'read', arguments: { file_path: 'src/a.ts' } },
      { id: 'g', name: 'grep', arguments: { pattern: 'enabled' } },
      { id: 'u', name: 'does_not_exist', arguments: {} },
      { id: 'bad', name: 'read', arguments: { file_path: 42 } },
    ]);
    expect(res.status).toBe(200);
    const results = res.json.results;
    expect(results.map((r: { id: string }) => r.id)).toEqual(['w', 'e', 'r', 'g', 'u', 'bad']);
    expect(results.slice(0, 4).every((r: { ok: boolean }) => r.ok)).toBe(true);
    expect(results[2].content[0].text).toContain('const enabled = true');
    expect(results[3].content[0].text).toContain('a.ts');
    expect(results[4]).toMatchObject({ ok: false, error: { code: 'UNKNOWN_TOOL' } });
    expect(results[4].content).toEqual([{ type: 'text', text: `Error: ${results[4].error.message}` }]);
    expect(results[5]).toMatchObject({ ok: false, error: { code: 'INVALID_ARGUMENTS' } });
    expect(results[5].error.message).toContain('file_path');
  });

  it('streams progress events and then the results with Accept: text/event-stream', async () => {
    const agent = await api.createAgent(api.keyA);
    const res = await api.callStream(api.keyA, agent.id, [
      { id: 'c1', name: 'write', arguments: { file_path: 'x.txt', content: 'x' } },
    ]);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const messages = await readSse(res.body as ReadableStream<Uint8Array>);
    expect(messages.map((m) => m.event)).toEqual(['progress', 'progress', 'results']);
    expect(messages[0]?.data).toMatchObject({ type: 'tool.call', callId: 'c1' });
    expect(messages[1]?.data).toMatchObject({ type: 'tool.result', callId: 'c1' });
    expect(messages[2]?.data.results[0]).toMatchObject({ id: 'c1', ok: true });
  });

  it("a large argument streams as a marker listed in the progress event's payloads, fetchable by pointer", async () => {
    const agent = await api.createAgent(api.keyA);
    const content = 'y'.repeat(40 * 1024);
    const res = await api.callStream(api.keyA, agent.id, [
      { id: 'big', name: 'write', arguments: { file_path: 'b.txt', content } },
    ]);
    const [call] = await readSse(res.body as ReadableStream<Uint8Array>, (m) => m.length >= 1);
    expect(call?.data).toMatchObject({ type: 'tool.call', callId: 'big' });
    expect(call?.data.payloads).toEqual([expect.objectContaining({ pointer: '/arguments/content' })]);
    const value = await api.request(
      api.keyA,
      'GET',
      `/v1/agents/${agent.id}/events/${call?.data.seq}/payload?pointer=/arguments/content`,
    );
    expect(value.json).toBe(content);
  });

  it('an ask policy suspends the call until a person allows or denies it', async () => {
    const agent = await api.createAgent(api.keyA, { policy: { ask: ['write'] } });
    const allowed = api.call(api.keyA, agent.id, [
      { id: 'w1', name: 'write', arguments: { file_path: 'ok.txt', content: 'yes' } },
    ]);
    const [request] = await waitFor(pending(agent.id));
    expect(request).toMatchObject({ kind: 'approval', callId: 'w1', payload: { toolName: 'write' } });
    expect(
      (await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/requests/${request.id}`, { allow: true }))
        .status,
    ).toBe(200);
    expect((await allowed).json.results[0]).toMatchObject({ ok: true });

    const denied = api.call(api.keyA, agent.id, [
      { id: 'w2', name: 'write', arguments: { file_path: 'no.txt', content: 'no' } },
    ]);
    const [second] = await waitFor(pending(agent.id));
    await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/requests/${second.id}`, {
      allow: false,
      reason: 'not today',
    });
    const result = (await denied).json.results[0];
    expect(result).toMatchObject({ ok: false, error: { code: 'DENIED' } });
    expect(result.error.message).toContain('not today');
    const again = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/requests/${second.id}`, {
      allow: true,
    });
    expect(again.status).toBe(409);
    expect((await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/files?path=no.txt`)).status).toBe(404);
  });

  it('deny policy refuses a tool', async () => {
    const agent = await api.createAgent(api.keyA, { policy: { deny: ['write'] } });
    const res = await api.call(api.keyA, agent.id, [
      { id: 'w', name: 'write', arguments: { file_path: 'a', content: 'b' } },
    ]);
    expect(res.json.results[0]).toMatchObject({ ok: false, error: { code: 'DENIED' } });
  });

  it("remote tools: the call waits for the client's answer, which can be a result or an error", async () => {
    const agent = await api.createAgent(api.keyA);
    const reg = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/remote-tools`, {
      tools: [
        {
          name: 'lookup_user',
          description: 'Looks a user up in the client',
          parameters: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] },
        },
      ],
    });
    expect(reg.json).toEqual({ tools: ['lookup_user'] });
    const tools = (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/tools`)).json.tools;
    expect(tools.at(-1)).toMatchObject({
      name: 'lookup_user',
      parameters: { properties: { id: { type: 'integer' } } },
    });

    const invalid = await api.call(api.keyA, agent.id, [
      { id: 'x', name: 'lookup_user', arguments: { id: 'seven' } },
    ]);
    expect(invalid.json.results[0].error.code).toBe('INVALID_ARGUMENTS');

    const call = api.call(api.keyA, agent.id, [{ id: 'u1', name: 'lookup_user', arguments: { id: 7 } }]);
    const [request] = await waitFor(pending(agent.id));
    expect(request).toMatchObject({
      kind: 'remote_tool',
      callId: 'u1',
      payload: { toolName: 'lookup_user', arguments: { id: 7 } },
    });
    expect(
      (await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/requests/${request.id}`, { allow: true }))
        .status,
    ).toBe(400);
    await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/requests/${request.id}`, {
      result: { name: 'Ada' },
    });
    expect((await call).json.results[0]).toMatchObject({ ok: true, value: { name: 'Ada' } });

    const failing = api.call(api.keyA, agent.id, [{ id: 'u2', name: 'lookup_user', arguments: { id: 8 } }]);
    const [r2] = await waitFor(pending(agent.id));
    await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/requests/${r2.id}`, {
      error: { message: 'no such user' },
    });
    expect((await failing).json.results[0]).toMatchObject({
      ok: false,
      error: { code: 'TOOL_FAILED', message: 'no such user' },
    });
  });

  it('a remote tool call fails when the client does not answer in time', async () => {
    const agent = await api.createAgent(api.keyA, {
      remoteTools: [
        { name: 'slow', description: 'never answered', parameters: { type: 'object' }, timeoutMs: 150 },
      ],
    });
    const res = await api.call(api.keyA, agent.id, [{ id: 's', name: 'slow', arguments: {} }]);
    expect(res.json.results[0]).toMatchObject({ ok: false });
    expect(res.json.results[0].error.message).toContain('did not answer');
    const expired = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/requests?state=expired`);
    expect(expired.json.requests).toHaveLength(1);
  });

  it('a client that disconnects cancels its batch: the pending request is cancelled and the log says ABORTED', async () => {
    const agent = await api.createAgent(api.keyA, {
      remoteTools: [{ name: 'hold', description: 'waits', parameters: { type: 'object' } }],
    });
    const controller = new AbortController();
    const gone = Promise.resolve(
      api.app.request(`/v1/agents/${agent.id}/calls`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${api.keyA}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ calls: [{ id: 'h', name: 'hold', arguments: {} }] }),
        signal: controller.signal,
      }),
    ).catch(() => undefined);
    await waitFor(pending(agent.id));
    controller.abort();
    await gone;
    const cancelled = await waitFor(async () => {
      const res = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/requests?state=cancelled`);
      return res.json.requests.length > 0 ? res.json.requests : undefined;
    });
    expect(cancelled[0].callId).toBe('h');
    const log = await waitFor(async () => {
      const res = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`);
      return res.json.events.find((e: { type: string }) => e.type === 'tool.result');
    });
    expect(log.data.error.code).toBe('ABORTED');
  });

  it('refuses a batch that uses one call id twice, naming it, and runs none of it', async () => {
    const agent = await api.createAgent(api.keyA);
    const res = await api.call(api.keyA, agent.id, [
      { id: 'a', name: 'write', arguments: { file_path: 'dup.txt', content: '1' } },
      { id: 'b', name: 'read', arguments: { file_path: 'dup.txt' } },
      { id: 'a', name: 'write', arguments: { file_path: 'dup.txt', content: '2' } },
    ]);
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('BAD_REQUEST');
    expect(res.json.error.message).toContain('"a" appears more than once');
    const events = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`);
    expect(events.json.events.filter((e: { type: string }) => e.type === 'tool.call')).toEqual([]);
  });

  it('rejects remote tools with invalid schemas or reserved names', async () => {
    const agent = await api.createAgent(api.keyA);
    const bad = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/remote-tools`, {
      tools: [{ name: 'x', description: 'd', parameters: { type: 'array' } }],
    });
    expect(bad.status).toBe(400);
    const reserved = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/remote-tools`, {
      tools: [{ name: 'run_code', description: 'd', parameters: { type: 'object' } }],
    });
    expect(reserved.status).toBe(400);
    expect(reserved.json.error.code).toBe('RESERVED_TOOL_NAME');
  });
});

describe('events', () => {
  it('pages the durable log and streams it with resume by Last-Event-ID', async () => {
    const agent = await api.createAgent(api.keyA);
    await api.call(api.keyA, agent.id, [
      { id: 'a', name: 'write', arguments: { file_path: 'a', content: '1' } },
    ]);
    const page = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events?after=0&limit=1`);
    expect(page.json.events).toHaveLength(1);
    expect(page.json.events[0]).toMatchObject({ seq: 1, type: 'tool.call', callId: 'a' });
    const rest = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events?after=${page.json.next}`);
    expect(rest.json.events.map((e: { seq: number }) => e.seq)).toEqual([2]);

    const controller = new AbortController();
    const res = await api.app.request(`/v1/agents/${agent.id}/events`, {
      headers: { Authorization: `Bearer ${api.keyA}`, Accept: 'text/event-stream', 'Last-Event-ID': '1' },
      signal: controller.signal,
    });
    let replayed = false;
    const stream = readSse(res.body as ReadableStream<Uint8Array>, (m) => {
      replayed = true;
      return m.length >= 3;
    });
    await until(() => replayed); // event 2 replayed: the next ones come live
    await api.call(api.keyA, agent.id, [{ id: 'b', name: 'read', arguments: { file_path: 'a' } }]);
    const messages = await stream;
    expect(messages.map((m) => m.id)).toEqual(['2', '3', '4']);
    expect(messages.map((m) => m.data.callId)).toEqual(['a', 'b', 'b']);
  });

  it('a stream whose request is aborted (its body never cancelled) ends and the service goes on', async () => {
    const agent = await api.createAgent(api.keyA);
    await api.call(api.keyA, agent.id, [{ id: 'a', name: 'read', arguments: { file_path: 'a' } }]);
    const controller = new AbortController();
    const res = await api.app.request(`/v1/agents/${agent.id}/events`, {
      headers: { Authorization: `Bearer ${api.keyA}`, Accept: 'text/event-stream' },
      signal: controller.signal,
    });
    let replayed = 0;
    const stream = readSse(res.body as ReadableStream<Uint8Array>, (m) => {
      replayed = m.length;
      return false;
    });
    await until(() => replayed === 2);
    // Only the request's signal: the handler must see it (it used to spin in microtasks here,
    // starving the event loop, so nothing else was ever served again).
    controller.abort();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const after = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}`);
    expect(after.status).toBe(200);
    await stream; // the stream ended
  });

  it('a shutdown closes open streams with a final shutdown event', async () => {
    const agent = await api.createAgent(api.keyA);
    // One call (events 1 and 2) for the stream to replay: once they arrived, the stream is live.
    await api.call(api.keyA, agent.id, [{ id: 'a', name: 'read', arguments: { file_path: 'a' } }]);
    const res = await api.app.request(`/v1/agents/${agent.id}/events`, {
      headers: { Authorization: `Bearer ${api.keyA}`, Accept: 'text/event-stream' },
    });
    let replayed = 0;
    const stream = readSse(res.body as ReadableStream<Uint8Array>, (m) => {
      replayed = m.length;
      return false;
    });
    await until(() => replayed === 2);
    api.lifecycle.begin();
    const messages = await stream;
    expect(messages.at(-1)).toMatchObject({ event: 'shutdown', data: { lastEventId: 2 } });
    const after = await api.request(api.keyA, 'GET', '/v1/agents');
    expect(after.status).toBe(503);
    expect(after.json.error.code).toBe('SHUTTING_DOWN');
  });
});
