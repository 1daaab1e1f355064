// The console's actions, in-process over the memory provider: create an agent from the form
// (preset, mode, limits) and delete one, the live state and usage as JSON, a tool call from the run
// page, upload and delete files, and answers to a remote tool's and a subagent's requests as a
// result or an error. Each through the public API with the session's key, behind the CSRF check.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { answerOf } from '../../../host/console/views/requests.ts';
import { until } from '../../helpers/until.ts';
import { ADMIN_KEY, type Api, type Loose, makeApi } from '../api/harness.ts';

const ORIGIN = 'http://localhost';
let api: Api;

beforeEach(async () => {
  api = await makeApi();
});
afterEach(() => api.close());

const signIn = async (key: string): Promise<{ cookie: string; csrf: string }> => {
  const res = await api.app.request('/console/signin', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
    body: new URLSearchParams({ key, role: 'tenant' }).toString(),
  });
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const page = await (await api.app.request('/console/agents', { headers: { cookie } })).text();
  return { cookie, csrf: /name="csrf-token" content="([^"]+)"/.exec(page)?.[1] ?? '' };
};

const get = (path: string, cookie: string) => api.app.request(path, { headers: { cookie } });
const post = (path: string, cookie: string, fields: Record<string, string> | FormData) =>
  api.app.request(path, {
    method: 'POST',
    headers: {
      origin: ORIGIN,
      cookie,
      ...(fields instanceof FormData ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
    },
    body: fields instanceof FormData ? fields : new URLSearchParams(fields).toString(),
  });

describe('console actions', () => {
  it('creates an agent with a preset, a mode and limits, and refuses what the API refuses', async () => {
    const { cookie, csrf } = await signIn(api.keyA);
    const list = await (await get('/console/agents', cookie)).text();
    // The form offers the API's own presets and modes.
    for (const option of ['code', 'creator', 'minimal', 'native', 'both'])
      expect(list).toContain(`<option value="${option}">${option}</option>`);
    const created = await post('/console/agents', cookie, {
      csrf,
      preset: 'minimal',
      mode: 'native',
      memoryMb: '256',
      cpus: '0.5',
      diskMb: '',
      cpuMs: '2000',
    });
    expect(created.status, await created.clone().text()).toBe(303);
    const id = decodeURIComponent((created.headers.get('location') ?? '').split('/').pop() ?? '');
    const agent = await api.request(api.keyA, 'GET', `/v1/agents/${id}`);
    expect(await (await get(`/console/agents/${id}`, cookie)).text()).toContain(
      '<td>memory 256 MiB · 0.5 CPUs</td><td>CPU 2000 ms</td>',
    );
    expect(agent.json).toMatchObject({
      preset: 'minimal',
      mode: 'native',
      config: { sandbox: { memoryMb: 256, cpus: 0.5 }, codeMode: { cpuMs: 2000 } },
    });
    const bad = await post('/console/agents', cookie, { csrf, memoryMb: '12' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('BAD_REQUEST');
    // What the service cannot do is said in the API's words (this one runs without code mode).
    const both = await post('/console/agents', cookie, { csrf, mode: 'both' });
    expect([both.status, await both.text()]).toEqual([400, expect.stringContaining('needs code mode')]);
    const words = await post('/console/agents', cookie, { csrf, memoryMb: 'lots' });
    expect(words.status).toBe(400);
    // Without the token, nothing is created.
    expect((await post('/console/agents', cookie, { preset: 'code' })).status).toBe(403);
    const { json } = await api.request(api.keyA, 'GET', '/v1/agents');
    expect(json.agents).toHaveLength(1);
  });

  it('deletes an agent only with its box ticked and its token, and never another tenant’s', async () => {
    const mine = await api.createAgent(api.keyA);
    const theirs = await api.createAgent(api.keyB);
    const { cookie, csrf } = await signIn(api.keyA);
    expect(await (await get(`/console/agents/${mine.id}`, cookie)).text()).toContain('id="delete-agent"');
    await post(`/console/agents/${mine.id}/delete`, cookie, { csrf });
    expect((await api.request(api.keyA, 'GET', `/v1/agents/${mine.id}`)).status).toBe(200);
    expect((await post(`/console/agents/${mine.id}/delete`, cookie, { confirm: 'yes' })).status).toBe(403);
    expect((await post(`/console/agents/${theirs.id}/delete`, cookie, { csrf, confirm: 'yes' })).status).toBe(
      404,
    );
    expect((await api.request(api.keyB, 'GET', `/v1/agents/${theirs.id}`)).status).toBe(200);
    const done = await post(`/console/agents/${mine.id}/delete`, cookie, { csrf, confirm: 'yes' });
    expect([done.status, done.headers.get('location')]).toEqual([303, '/console/agents']);
    expect((await api.request(api.keyA, 'GET', `/v1/agents/${mine.id}`)).status).toBe(404);
  });

  it('serves the live state of the list and the usage of one agent as text in readable units', async () => {
    const agent = await api.createAgent(api.keyA, { sandbox: { diskMb: 16 } });
    const { cookie } = await signIn(api.keyA);
    const before = (await (await get('/console/agents.json', cookie)).json()) as Loose;
    expect(before.agents).toEqual([{ id: agent.id, sandbox: 'none', state: 'none', lastCall: '' }]);
    await api.call(api.keyA, agent.id, [
      { id: 'w', name: 'write', arguments: { file_path: 'a.txt', content: 'x'.repeat(3 * 1024 + 300) } },
    ]);
    const after = (await (await get('/console/agents.json', cookie)).json()) as Loose;
    expect(after.agents[0]).toMatchObject({ sandbox: 'ready', state: 'ready' });
    expect(after.agents[0].lastCall).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    const usage = (await (await get(`/console/agents/${agent.id}/usage.json`, cookie)).json()) as Loose;
    expect(usage).toMatchObject({
      sandbox: 'ready',
      cells: { state: 'ready', calls: '1', disk: '3.29 KiB of 16 MiB (0%)', memory: 'not measured' },
    });
    // Without a session: no JSON, the sign-in page.
    expect((await api.app.request('/console/agents.json')).status).toBe(303);
    expect(
      (await get(`/console/agents/${(await api.createAgent(api.keyB)).id}/usage.json`, cookie)).status,
    ).toBe(404);
  });

  it('calls a tool from the run page and shows its result as text', async () => {
    const agent = await api.createAgent(api.keyA);
    const { cookie, csrf } = await signIn(api.keyA);
    const run = await (await get(`/console/agents/${agent.id}/run`, cookie)).text();
    expect(run).toContain('<option value="write">write</option>');
    const arguments_ = JSON.stringify({ file_path: 'x.html', content: '<script>alert(1)</script>' });
    const wrote = await (
      await post(`/console/agents/${agent.id}/run/call`, cookie, {
        csrf,
        name: 'write',
        arguments: arguments_,
      })
    ).text();
    expect(wrote).toContain('data-ok="true"');
    const read = await (
      await post(`/console/agents/${agent.id}/run/call`, cookie, {
        csrf,
        name: 'read',
        arguments: '{"file_path":"x.html"}',
      })
    ).text();
    expect(read).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(read).not.toContain('<script>alert');
    const failed = await (
      await post(`/console/agents/${agent.id}/run/call`, cookie, {
        csrf,
        name: 'read',
        arguments: '{"file_path":"none"}',
      })
    ).text();
    expect(failed).toContain('data-ok="false"');
    const notJson = await (
      await post(`/console/agents/${agent.id}/run/call`, cookie, { csrf, name: 'read', arguments: '{nope' })
    ).text();
    expect(notJson).toContain('The arguments are not JSON.');
    expect(
      (await post(`/console/agents/${agent.id}/run/call`, cookie, { name: 'read', arguments: '{}' })).status,
    ).toBe(403);
  });

  it('uploads a file into the directory shown and deletes files and directories', async () => {
    const agent = await api.createAgent(api.keyA);
    await api.request(api.keyA, 'PUT', `/v1/agents/${agent.id}/files?path=src/keep.txt`, 'keep');
    const { cookie, csrf } = await signIn(api.keyA);
    const form = new FormData();
    form.set('csrf', csrf);
    form.set('dir', 'src');
    form.set('file', new File(['uploaded <b>bytes</b>'], 'notes.txt'));
    const up = await post(`/console/agents/${agent.id}/files/upload`, cookie, form);
    expect([up.status, up.headers.get('location')]).toEqual([
      303,
      `/console/agents/${agent.id}/files?path=src`,
    ]);
    const read = await api.app.request(`/v1/agents/${agent.id}/files?path=src/notes.txt`, {
      headers: { authorization: `Bearer ${api.keyA}` },
    });
    expect(await read.text()).toBe('uploaded <b>bytes</b>');
    // A name that would leave the directory is refused, whatever the browser sent.
    const outside = new FormData();
    outside.set('csrf', csrf);
    outside.set('dir', 'src');
    outside.set('name', '../../etc/x');
    outside.set('file', new File(['x'], 'x'));
    expect((await post(`/console/agents/${agent.id}/files/upload`, cookie, outside)).status).toBe(400);

    const listing = await (await get(`/console/agents/${agent.id}/files?path=src`, cookie)).text();
    expect(listing).toContain('<tr data-entry="notes.txt">');
    expect(listing).toContain('id="upload"');
    await post(`/console/agents/${agent.id}/files/delete`, cookie, { csrf, path: 'src/notes.txt' });
    const gone = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/directory?path=src`);
    expect(gone.json.entries.map((e: Loose) => e.name)).toEqual(['keep.txt']);
    // A directory with contents goes only with its box ticked.
    expect(
      (await post(`/console/agents/${agent.id}/files/delete`, cookie, { csrf, path: 'src' })).status,
    ).toBe(409);
    const removed = await post(`/console/agents/${agent.id}/files/delete`, cookie, {
      csrf,
      path: 'src',
      recursive: 'true',
    });
    expect([removed.status, removed.headers.get('location')]).toEqual([
      303,
      `/console/agents/${agent.id}/files?path=.`,
    ]);
    const root = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/directory?path=.`);
    expect(root.json.entries).toEqual([]);
  });

  it("answers a remote tool's request with a result or an error, and a subagent's with its text", async () => {
    const agent = await api.createAgent(api.keyA, {
      remoteTools: [{ name: 'lookup', description: 'client side', parameters: { type: 'object' } }],
    });
    const { cookie, csrf } = await signIn(api.keyA);
    const pendingForm = async () =>
      until(async () => {
        const text = await (await get(`/console/agents/${agent.id}`, cookie)).text();
        return text.includes('data-request="req_') && text;
      });
    const first = api.call(api.keyA, agent.id, [{ id: 'l1', name: 'lookup', arguments: { q: '<i>x</i>' } }]);
    let page = await pendingForm();
    expect(page).toContain('lookup({&quot;q&quot;:&quot;&lt;i&gt;x&lt;/i&gt;&quot;})');
    expect(page).toContain('value="result">Send result</button>');
    let rid = /data-request="(req_[^"]+)"/.exec(page)?.[1] as string;
    await post(`/console/agents/${agent.id}/requests/${rid}`, cookie, {
      csrf,
      kind: 'remote_tool',
      result: '{"found": 3}',
      outcome: 'result',
    });
    expect((await first).json.results[0]).toMatchObject({ ok: true, value: { found: 3 } });

    const second = api.call(api.keyA, agent.id, [{ id: 'l2', name: 'lookup', arguments: {} }]);
    page = await pendingForm();
    rid = /data-request="(req_[^"]+)"/.exec(page)?.[1] as string;
    await post(`/console/agents/${agent.id}/requests/${rid}`, cookie, {
      csrf,
      kind: 'remote_tool',
      result: 'the index is down',
      outcome: 'error',
    });
    const failed = (await second).json.results[0];
    expect(failed).toMatchObject({ ok: false, error: { code: 'TOOL_FAILED' } });
    expect(failed.error.message).toContain('the index is down');
  });

  it('turns each kind’s form into the answer that kind takes', () => {
    expect(answerOf('remote_tool', { result: '[1, 2]', outcome: 'result' })).toEqual({ result: [1, 2] });
    expect(answerOf('remote_tool', { result: 'plain words', outcome: 'result' })).toEqual({
      result: 'plain words',
    });
    expect(answerOf('plugin_client_query', { result: '', outcome: 'error' })).toEqual({
      error: 'refused from the console',
    });
    // A subagent's, a reminder's and a wake-up's result is the text, even when it looks like JSON.
    for (const kind of ['subagent', 'reminder', 'agent_wakeup'])
      expect(answerOf(kind, { result: '42', outcome: 'result' })).toEqual({ result: '42' });
    expect(answerOf('agent_wakeup', { result: 'no', outcome: 'error' })).toEqual({ error: 'no' });
  });
});

describe('operator actions', () => {
  const operator = async (): Promise<{ cookie: string; csrf: string }> => {
    const res = await api.app.request('/console/signin', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
      body: new URLSearchParams({ key: ADMIN_KEY, role: 'operator' }).toString(),
    });
    const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const page = await (await api.app.request('/console/operator', { headers: { cookie } })).text();
    return { cookie, csrf: /name="csrf-token" content="([^"]+)"/.exec(page)?.[1] ?? '' };
  };

  it('creates a tenant, shows its key once, issues and revokes keys, and lists its agents', async () => {
    const { cookie, csrf } = await operator();
    expect(await (await get('/console/operator', cookie)).text()).toContain('id="create-tenant"');
    const created = await post('/console/operator/tenants', cookie, { csrf, name: 'made <here>' });
    expect(created.status).toBe(200);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const page = await created.text();
    expect(page).toContain('Tenant made &lt;here&gt;');
    const apiKey = /<p class="secret">([^<]+)<\/p>/.exec(page)?.[1] as string;
    // The key shown works, and its tenant is the new one.
    const agent = await api.createAgent(apiKey);
    const tenantId = /<tr data-tenant="([^"]+)"/.exec(await (await get('/console/operator', cookie)).text());
    expect(tenantId).not.toBeNull();
    const tenants = (await api.request(ADMIN_KEY, 'GET', '/v1/tenants')).json.tenants as Loose[];
    const id = tenants.find((t) => t.name === 'made <here>').id as string;
    await api.call(apiKey, agent.id, [
      { id: 'w', name: 'write', arguments: { file_path: 'a', content: 'b' } },
    ]);

    // An agent with no sandbox yet is listed too.
    const idle = await api.createAgent(apiKey);
    const tenantPage = await (await get(`/console/operator/tenants/${id}`, cookie)).text();
    expect(tenantPage).toContain(`<tr data-agent="${agent.id}">`);
    expect(tenantPage).toContain(`<tr data-agent="${idle.id}">`);
    expect(tenantPage).toContain('Agents (2)');
    // Another tenant's agents are not listed there.
    const other = await api.createAgent(api.keyA);
    await api.call(api.keyA, other.id, [
      { id: 'w', name: 'write', arguments: { file_path: 'a', content: 'b' } },
    ]);
    expect(await (await get(`/console/operator/tenants/${id}`, cookie)).text()).not.toContain(other.id);

    const issued = await (
      await post(`/console/operator/tenants/${id}/keys`, cookie, { csrf, name: 'ci', days: '30' })
    ).text();
    const second = /<p class="secret">([^<]+)<\/p>/.exec(issued)?.[1] as string;
    expect(second).not.toBe(apiKey);
    expect(issued).toContain('live until');
    expect((await api.request(second, 'GET', '/v1/agents')).status).toBe(200);
    const keys = (await api.request(ADMIN_KEY, 'GET', `/v1/tenants/${id}/keys`)).json.keys as Loose[];
    const ci = keys.find((k) => k.name === 'ci');
    expect(ci.expiresAt).toBeGreaterThan(Date.now() + 29 * 86_400_000);
    const revoked = await post(`/console/operator/tenants/${id}/keys/${ci.id}/revoke`, cookie, { csrf });
    expect([revoked.status, revoked.headers.get('location')]).toEqual([
      303,
      `/console/operator/tenants/${id}`,
    ]);
    expect((await api.request(second, 'GET', '/v1/agents')).status).toBe(401);
    expect((await api.request(apiKey, 'GET', '/v1/agents')).status).toBe(200);
    // Without the token nothing changes; a tenant's session cannot reach these pages at all.
    expect((await post('/console/operator/tenants', cookie, { name: 'forged' })).status).toBe(403);
    const tenant = await signIn(api.keyA);
    expect(
      (await post('/console/operator/tenants', tenant.cookie, { csrf: tenant.csrf, name: 'x' })).status,
    ).toBe(401);
    expect((await get(`/console/operator/tenants/${id}`, tenant.cookie)).status).toBe(303);
  });

  it("lists all of a tenant's keys, more than one page of the API's", async () => {
    const { cookie } = await operator();
    const tenantId = (await api.store.tenants.verifyKey(api.keyA))?.id as string;
    const make = async (i: number) => {
      const made = await api.request(api.keyA, 'POST', '/v1/keys', { name: `k${i}` });
      expect(made.status).toBe(201);
      return made.json.id as string;
    };
    const ids: string[] = [];
    for (let i = 0; i < 99; i++) ids.push(await make(i));
    // 20 revoked (an ended key is listed too) and 20 more made: 120 keys, 100 of them live.
    for (const id of ids.slice(0, 20))
      expect((await api.request(api.keyA, 'DELETE', `/v1/keys/${id}`)).status).toBe(204);
    for (let i = 99; i < 119; i++) await make(i);
    const rows = (await api.request(ADMIN_KEY, 'GET', `/v1/tenants/${tenantId}/keys`)).json;
    expect(rows.keys).toHaveLength(100);
    expect(rows.next).toBeTypeOf('string'); // the API's first page does not hold them all
    const page = await (await get(`/console/operator/tenants/${tenantId}`, cookie)).text();
    expect(page.match(/<tr data-key="/g)).toHaveLength(120);
  });
});
