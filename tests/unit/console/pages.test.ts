// What a signed-in person does in the console, in-process over the memory provider: answer an
// approval from its form (with hostile arguments shown as text), export the log as NDJSON with
// the page's filters, browse the workspace, and the operator's view with the admin key.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIRECTORY_LIMIT } from '../../../host/api/routes/files.ts';
import { answerOf } from '../../../host/console/views/requests.ts';
import { until } from '../../helpers/until.ts';
import { ADMIN_KEY, type Api, type Loose, makeApi } from '../api/harness.ts';

const ORIGIN = 'http://localhost';
let api: Api;

beforeEach(async () => {
  api = await makeApi();
});
afterEach(() => api.close());

const signIn = async (
  key: string,
  role = 'tenant',
): Promise<{ cookie: string; csrf: string; home: string }> => {
  const res = await api.app.request('/console/signin', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
    body: new URLSearchParams({ key, role }).toString(),
  });
  expect(res.status).toBe(303);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const home = res.headers.get('location') ?? '';
  const page = await (await api.app.request(home, { headers: { cookie } })).text();
  return { cookie, csrf: /name="csrf-token" content="([^"]+)"/.exec(page)?.[1] ?? '', home };
};

const get = (path: string, cookie: string) => api.app.request(path, { headers: { cookie } });

describe('console pages', () => {
  it('shows a pending approval with its arguments as text and answers it from the form', async () => {
    const agent = await api.createAgent(api.keyA, { policy: { ask: ['write'] } });
    const call = api.call(api.keyA, agent.id, [
      { id: 'w1', name: 'write', arguments: { file_path: 'x.html', content: '<script>alert(1)</script>' } },
    ]);
    const { cookie, csrf } = await signIn(api.keyA);
    const page = await until(async () => {
      const text = await (await get(`/console/agents/${agent.id}`, cookie)).text();
      return text.includes('data-request="req_') && text;
    });
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page).not.toContain('<script>alert');
    const rid = /data-request="(req_[^"]+)"/.exec(page)?.[1] as string;
    const answer = await api.app.request(`/console/agents/${agent.id}/requests/${rid}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN, cookie },
      body: new URLSearchParams({ csrf, kind: 'approval', decision: 'allow', reason: '' }).toString(),
    });
    expect([answer.status, answer.headers.get('location')]).toEqual([303, `/console/agents/${agent.id}`]);
    expect((await call).json.results[0]).toMatchObject({ ok: true });
    expect(await (await get(`/console/agents/${agent.id}`, cookie)).text()).not.toContain(
      'data-request="req_',
    );
  });

  it('answers a multiple-choice question from its form with every pick', async () => {
    const agent = await api.createAgent(api.keyA);
    const question = {
      id: 'db',
      question: 'Which stores?',
      options: [{ label: 'pg' }, { label: 'sqlite' }, { label: 'none' }],
      multi_select: true,
    };
    const call = api.call(api.keyA, agent.id, [
      { id: 'q1', name: 'ask_user_question', arguments: { questions: [question] } },
    ]);
    const { cookie, csrf } = await signIn(api.keyA);
    const page = await until(async () => {
      const text = await (await get(`/console/agents/${agent.id}`, cookie)).text();
      return text.includes('data-request="req_') && text;
    });
    expect(page).toContain('<select name="q:db" multiple="">');
    const rid = /data-request="(req_[^"]+)"/.exec(page)?.[1] as string;
    const body = new URLSearchParams([
      ['csrf', csrf],
      ['kind', 'user_question'],
      ['q:db', 'pg'],
      ['q:db', 'sqlite'],
    ]);
    const answer = await api.app.request(`/console/agents/${agent.id}/requests/${rid}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN, cookie },
      body: body.toString(),
    });
    expect(answer.status).toBe(303);
    expect((await call).json.results[0].value).toMatchObject({
      answers: [{ id: 'db', answer: ['pg', 'sqlite'] }],
    });
  });

  it('turns forms into answers that fail closed: no explicit Allow is a denial; picks of a question stay a list', () => {
    expect(answerOf('approval', { decision: 'allow', reason: '' })).toEqual({ allow: true });
    expect(answerOf('approval', { reason: 'too risky' })).toEqual({ allow: false, reason: 'too risky' });
    expect(answerOf('plan_review', { decision: 'Allow' })).toEqual({ allow: false });
    expect(answerOf('user_question', { csrf: 't', 'q:db': ['pg', 'sqlite'], 'q:name': 'x' })).toEqual({
      answers: { db: ['pg', 'sqlite'], name: 'x' },
    });
    expect(answerOf('remote_tool', { answer: '{"result":1}' })).toEqual({ result: 1 });
    expect(answerOf('remote_tool', { answer: 'not json' })).toBeNull();
  });

  it('exports the log as NDJSON, whole or filtered as the page filters', async () => {
    const agent = await api.createAgent(api.keyA);
    await api.call(api.keyA, agent.id, [
      { id: 'a', name: 'write', arguments: { file_path: 'a.txt', content: 'a' } },
      { id: 'b', name: 'read', arguments: { file_path: 'a.txt' } },
    ]);
    const { cookie } = await signIn(api.keyA);
    const all = await get(`/console/agents/${agent.id}/events.ndjson`, cookie);
    expect(all.headers.get('content-type')).toBe('application/x-ndjson');
    expect(all.headers.get('content-disposition')).toContain('attachment');
    const events = (await all.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.map((e) => `${e.type} ${e.callId}`)).toEqual(
      expect.arrayContaining(['tool.call a', 'tool.result a', 'tool.call b', 'tool.result b']),
    );
    // Past one page (1,000 events) the export reads on, page by page, to the end.
    const { sessionId } = (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}`)).json;
    api.store.events.append(
      Array.from({ length: 2100 }, (_, i) => ({
        sessionId,
        type: 'note.added',
        surface: 'log-only' as const,
        data: { i },
      })),
    );
    await api.store.events.flush();
    const long = (await (await get(`/console/agents/${agent.id}/events.ndjson?family=note`, cookie)).text())
      .trim()
      .split('\n');
    expect(long.map((line) => JSON.parse(line).data.i)).toEqual(Array.from({ length: 2100 }, (_, i) => i));
    const only = await (
      await get(`/console/agents/${agent.id}/events.ndjson?family=tool&call=b`, cookie)
    ).text();
    expect(
      only
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).type),
    ).toEqual(['tool.call', 'tool.result']);
  });

  it('browses the workspace: directories sorted, files viewed, and the listing route bounded', async () => {
    const agent = await api.createAgent(api.keyA);
    for (const path of ['src/b.ts', 'src/a.ts', 'README.md'])
      await api.request(api.keyA, 'PUT', `/v1/agents/${agent.id}/files?path=${path}`, `// ${path}`);
    const listing = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/directory?path=src`);
    expect(listing.json).toMatchObject({
      path: 'src',
      entries: [
        { name: 'a.ts', type: 'file' },
        { name: 'b.ts', type: 'file' },
      ],
      truncated: false,
    });
    expect(DIRECTORY_LIMIT).toBe(1000);
    const { cookie } = await signIn(api.keyA);
    const root = await (await get(`/console/agents/${agent.id}/files?path=.`, cookie)).text();
    expect(root.indexOf('README.md')).toBeLessThan(root.indexOf('>src<'));
    const file = await (await get(`/console/agents/${agent.id}/files?path=src%2Fa.ts`, cookie)).text();
    expect(file).toContain('<pre class="file">// src/a.ts</pre>');
    const missing = await get(`/console/agents/${agent.id}/files?path=nope.txt`, cookie);
    expect(missing.status).toBe(404);
  });

  it("merges the tenant's agents' logs into one timeline, resumed by its cursor, without another tenant's", async () => {
    const one = await api.createAgent(api.keyA);
    const two = await api.createAgent(api.keyA);
    const theirs = await api.createAgent(api.keyB);
    const write = (id: string, key: string, callId: string) =>
      api.call(key, id, [{ id: callId, name: 'write', arguments: { file_path: 'a.txt', content: callId } }]);
    await write(one.id, api.keyA, 'one-1');
    await write(two.id, api.keyA, 'two-1');
    await write(theirs.id, api.keyB, 'theirs-1');
    const { cookie } = await signIn(api.keyA);
    expect(await (await get('/console/timeline', cookie)).text()).toContain(
      'data-poll="/console/timeline/events"',
    );
    const first = (await (await get('/console/timeline/events', cookie)).json()) as Loose;
    const calls = (body: Loose) =>
      body.events.filter((e: Loose) => e.type === 'tool.call').map((e: Loose) => `${e.agentId} ${e.callId}`);
    expect(calls(first)).toEqual([`${one.id} one-1`, `${two.id} two-1`]);
    expect(first.events.map((e: Loose) => e.at)).toEqual(
      [...first.events.map((e: Loose) => e.at)].sort((a, b) => a - b),
    );
    await write(two.id, api.keyA, 'two-2');
    const next = (await (
      await get(`/console/timeline/events?cursor=${first.cursor}`, cookie)
    ).json()) as Loose;
    expect(calls(next)).toEqual([`${two.id} two-2`]);
    // A forged cursor is a fresh start, not an error.
    expect((await get('/console/timeline/events?cursor=%7Bnot-json', cookie)).status).toBe(200);
  });

  it('gives the operator tenants and service figures with the admin key, and nothing with a tenant key', async () => {
    expect(
      (await api.request(ADMIN_KEY, 'GET', '/v1/tenants')).json.tenants.map((t: { name: string }) => t.name),
    ).toEqual(['tenant-a', 'tenant-b']);
    expect((await api.request(api.keyA, 'GET', '/v1/tenants')).status).toBe(401);
    const { cookie, home } = await signIn(ADMIN_KEY, 'operator');
    expect(home).toBe('/console/operator');
    const page = await (await get('/console/operator', cookie)).text();
    expect(page).toContain('tenant-a');
    expect(page).toContain('data-metric="dsh_isolate_workers"');
    // The operator session is not a tenant's: agent pages send it back to sign in.
    expect((await get('/console/agents', cookie)).status).toBe(303);
    const tenant = await signIn(api.keyA);
    expect((await get('/console/operator', tenant.cookie)).status).toBe(303);
  });
});
