import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_KEY, type Api, makeApi } from './harness.ts';

let api: Api;
beforeEach(async () => {
  api = await makeApi();
});
afterEach(async () => {
  await api.close();
});

describe('health, openapi, metrics', () => {
  it('answers health without a key', async () => {
    const res = await api.request(undefined, 'GET', '/v1/health');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ ok: true, version: 'test' });
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('serves an OpenAPI 3.1 document generated from the validating schemas', async () => {
    const res = await api.request(undefined, 'GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.json.openapi).toBe('3.1.0');
    expect(Object.keys(res.json.paths)).toEqual(
      expect.arrayContaining([
        '/v1/agents',
        '/v1/agents/{id}/calls',
        '/v1/agents/{id}/events',
        '/v1/tenants',
      ]),
    );
    const create = res.json.paths['/v1/agents'].post.requestBody.content['application/json'].schema;
    expect(create.properties.preset.enum).toEqual(['standard', 'code', 'minimal', 'creator']);
  });

  it('exports Prometheus metrics for calls and errors', async () => {
    const agent = await api.createAgent(api.keyA);
    await api.call(api.keyA, agent.id, [
      { id: 'c1', name: 'write', arguments: { file_path: 'a.txt', content: 'x' } },
      { id: 'c2', name: 'nope', arguments: {} },
    ]);
    await api.request(api.keyA, 'GET', '/v1/agents/agt_missing');
    const res = await api.request(ADMIN_KEY, 'GET', '/metrics');
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(res.text).toContain('dsh_tool_calls_total{tool="write",outcome="ok"} 1');
    expect(res.text).toContain('dsh_tool_calls_total{tool="(unknown)",outcome="UNKNOWN_TOOL"} 1');
    expect(res.text).toContain('dsh_api_errors_total{code="NOT_FOUND"} 1');
    expect(res.text).toMatch(/dsh_tool_call_seconds_count\{tool="write"\} 1/);
    expect(res.text).toContain('dsh_sandboxes_live 1');
  });
});

describe('auth', () => {
  it('401 with a WWW-Authenticate challenge without a key, with a wrong key or scheme', async () => {
    for (const headers of [
      {} as Record<string, string>,
      { Authorization: 'Bearer dsk_wrongwrongwrongwrongwrongwrongwrongwrong' },
      { Authorization: 'Basic Zm9vOmJhcg==' },
    ]) {
      const res = await api.request(undefined, 'GET', '/v1/agents', undefined, headers);
      expect(res.status).toBe(401);
      expect(res.json.error.code).toBe('UNAUTHORIZED');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="dsh-sandbox"/);
    }
  });

  it('creates tenants only with the admin key, returning the key once', async () => {
    expect((await api.request(api.keyA, 'POST', '/v1/tenants', { name: 'x' })).status).toBe(401);
    const res = await api.request(ADMIN_KEY, 'POST', '/v1/tenants', { name: 'third' });
    expect(res.status).toBe(201);
    expect(res.json.apiKey).toMatch(/^dsk_/);
    const list = await api.request(res.json.apiKey, 'GET', '/v1/agents');
    expect(list.json).toEqual({ agents: [] });
  });
});

describe('agents', () => {
  it('creates, lists, gets and deletes an agent; the sandbox is made on first use and destroyed with it', async () => {
    const agent = await api.createAgent(api.keyA, { preset: 'standard' });
    expect(agent).toMatchObject({ preset: 'standard', mode: 'native' });
    expect(
      (await api.request(api.keyA, 'GET', '/v1/agents')).json.agents.map((a: { id: string }) => a.id),
    ).toEqual([agent.id]);
    expect((await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}`)).json.id).toBe(agent.id);
    expect(await api.sandboxes.get(agent.id)).toBeUndefined();
    await api.request(api.keyA, 'PUT', `/v1/agents/${agent.id}/files?path=f.txt`, 'hi', {
      'Content-Type': 'application/octet-stream',
    });
    expect(await api.sandboxes.get(agent.id)).toBeDefined();
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    expect((await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}`)).status).toBe(404);
    expect(await api.sandboxes.get(agent.id)).toBeUndefined();
  });

  it("another tenant's agent is 404 on every route, exactly like an unknown id", async () => {
    const agent = await api.createAgent(api.keyA);
    const base = `/v1/agents/${agent.id}`;
    const routes: [string, string, unknown?][] = [
      ['GET', base],
      ['DELETE', base],
      ['GET', `${base}/tools`],
      ['GET', `${base}/events`],
      ['GET', `${base}/requests`],
      ['POST', `${base}/calls`, { calls: [{ id: '1', name: 'read', arguments: { file_path: 'a' } }] }],
      ['GET', `${base}/files?path=a`],
      ['GET', `${base}/archive?path=.`],
      [
        'POST',
        `${base}/remote-tools`,
        { tools: [{ name: 't', description: 'd', parameters: { type: 'object' } }] },
      ],
      ['POST', `${base}/requests/req_x`, { allow: true }],
      ['GET', `${base}/todos`],
      ['GET', `${base}/goal`],
      ['GET', `${base}/plan-mode`],
      ['PUT', `${base}/plan-mode`, { planMode: true }],
    ];
    for (const [method, path, body] of routes) {
      const res = await api.request(api.keyB, method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.json.error.code).toBe('NOT_FOUND');
    }
    expect((await api.request(api.keyB, 'GET', '/v1/agents')).json.agents).toEqual([]);
    expect((await api.request(api.keyA, 'GET', base)).status).toBe(200);
  });

  it('tools: presets and modes decide exactly what the model sees', async () => {
    const standard = await api.createAgent(api.keyA, { preset: 'standard' });
    const names = (await api.request(api.keyA, 'GET', `/v1/agents/${standard.id}/tools`)).json.tools.map(
      (t: { name: string }) => t.name,
    );
    expect(names).toEqual([
      'bash',
      'read',
      'read_image',
      'write',
      'edit',
      'glob',
      'grep',
      'job_list',
      'job_output',
      'job_kill',
      'ask_user_question',
      'todo_write',
      'create_goal',
      'get_goal',
      'update_goal',
      'exit_plan_mode',
    ]);
    const minimal = await api.createAgent(api.keyA, { preset: 'minimal' });
    const minimalNames = (
      await api.request(api.keyA, 'GET', `/v1/agents/${minimal.id}/tools`)
    ).json.tools.map((t: { name: string }) => t.name);
    expect(minimalNames).toEqual(['bash', 'str_replace_editor']);
    const restricted = await api.createAgent(api.keyA, { restrict: { allow: ['read', 'grep'] } });
    const tools = (await api.request(api.keyA, 'GET', `/v1/agents/${restricted.id}/tools`)).json;
    expect(tools.mode).toBe('native');
    expect(tools.tools.map((t: { name: string }) => t.name)).toEqual(['read', 'grep']);
    expect(tools.tools[0].parameters.properties.file_path.type).toBe('string');
  });

  it('refuses a mode the service cannot serve at creation, not at the first call', async () => {
    const res = await api.request(api.keyA, 'POST', '/v1/agents', { preset: 'code' });
    expect(res.status).toBe(400);
    expect(res.json.error.message).toContain('code mode');
    expect((await api.request(api.keyA, 'GET', '/v1/agents')).json.agents).toEqual([]);
  });

  it('rejects an invalid policy rule with 400 and the reason', async () => {
    const res = await api.request(api.keyA, 'POST', '/v1/agents', {
      policy: { rules: [{ tool: 'bash', decision: 'maybe' }] },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.message).toContain('decision');
  });

  it('an empty body creates a standard agent', async () => {
    const res = await api.request(api.keyA, 'POST', '/v1/agents');
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({ preset: 'standard', mode: 'native' });
  });
});
