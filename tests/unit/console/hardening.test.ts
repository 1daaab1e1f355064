// The console against hostile callers, in-process over the memory provider: bodies too large for a
// form, a tenant with more agents than request slots on the timeline, subresource requests from
// another site (Fetch Metadata), streams that outlive their session's sign-out, a sign-in over a
// held session, and links in a hostile terminal's output.
import { readFileSync } from 'node:fs';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { consoleRoutes } from '../../../host/console/index.ts';
import { type Api, makeApi } from '../api/harness.ts';

const ORIGIN = 'http://localhost';
let api: Api;

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

const signIn = async (app: Pick<Api['app'], 'request'>, key: string) => {
  const res = await app.request('/console/signin', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
    body: form({ key, role: 'tenant' }),
  });
  expect(res.status).toBe(303);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const page = await (await app.request('/console/agents', { headers: { cookie } })).text();
  return { cookie, csrf: /name="csrf-token" content="([^"]+)"/.exec(page)?.[1] ?? '' };
};

describe('the console against hostile callers', () => {
  afterEach(() => api.close());

  it('refuses a form body larger than a form needs, before a session or key is looked at', async () => {
    api = await makeApi();
    const huge = form({ key: api.keyA, role: 'tenant', pad: 'x'.repeat(2 * 1024 * 1024) });
    const signin = await api.app.request('/console/signin', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
      body: huge,
    });
    expect(signin.status).toBe(413);
    expect(signin.headers.get('set-cookie')).toBeNull();
    expect(signin.headers.get('content-security-policy')).toContain("default-src 'self'");
    // Signed in, an answer's form is bounded too (the API's own JSON limit is 1 MiB).
    const { id } = await api.createAgent(api.keyA);
    const { cookie, csrf } = await signIn(api.app, api.keyA);
    const answer = await api.app.request(`/console/agents/${id}/requests/req_x`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN, cookie },
      body: form({ csrf, kind: 'other', answer: 'x'.repeat(3 * 1024 * 1024) }),
    });
    expect(answer.status).toBe(413);
    // The upload takes a file of up to 16 MiB (with its form), and not a byte past its bound; its
    // path's larger bound is not any other form's.
    const upload = (bytes: number, path = `/console/agents/${id}/files/upload`) => {
      const body = new FormData();
      body.set('csrf', csrf);
      body.set('dir', '.');
      body.set('file', new File([new Uint8Array(bytes)], 'big.bin'));
      return api.app.request(path, { method: 'POST', headers: { origin: ORIGIN, cookie }, body });
    };
    expect((await upload(16 * 1024 * 1024)).status).toBe(303);
    expect((await upload(19 * 1024 * 1024)).status).toBe(413);
    expect((await upload(3 * 1024 * 1024, `/console/agents/${id}/files/delete`)).status).toBe(413);
    // A sign-in of ordinary size still works.
    expect((await signIn(api.app, api.keyA)).cookie).toMatch(/^dsh_console=/);
  });

  it('reads the timeline of a tenant with more agents than request slots', async () => {
    api = await makeApi({ tenantConcurrency: 6 });
    const ids = [];
    for (let i = 0; i < 9; i++) {
      const { id } = await api.createAgent(api.keyA);
      await api.call(api.keyA, id, [
        { id: 'w', name: 'write', arguments: { file_path: 'a.txt', content: 'a' } },
      ]);
      ids.push(id);
    }
    const { cookie } = await signIn(api.app, api.keyA);
    const res = await api.app.request('/console/timeline/events', { headers: { cookie } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { events: { agentId: string }[] };
    expect(new Set(body.events.map((e) => e.agentId))).toEqual(new Set(ids));
  });

  it("stops reading a timeline poll's pages past its byte budget and reads the rest on the next polls", async () => {
    api = await makeApi();
    const ids = new Set<string>();
    for (let i = 0; i < 9; i++) {
      const { id } = await api.createAgent(api.keyA);
      await api.call(api.keyA, id, [
        { id: 'w', name: 'write', arguments: { file_path: 'a.txt', content: 'a' } },
      ]);
      ids.add(id);
    }
    const app = new Hono().route(
      '/',
      consoleRoutes({ fetch: (r, env) => api.app.fetch(r, env), timelinePollBytes: 1 }),
    );
    const { cookie } = await signIn(app, api.keyA);
    const seen = new Set<string>();
    let cursor = '';
    for (let poll = 0; poll < 60 && seen.size < ids.size; poll++) {
      const res = await app.request(`/console/timeline/events?cursor=${cursor}`, { headers: { cookie } });
      const body = (await res.json()) as { events: { agentId: string }[]; cursor: string; more: boolean };
      // One byte of budget: only the pages already started (4 at once) are read.
      const agents = new Set(body.events.map((e) => e.agentId));
      expect(agents.size).toBeLessThanOrEqual(4);
      for (const agent of agents) {
        expect(seen.has(agent), 'read twice').toBe(false);
        seen.add(agent);
      }
      // Agents it did not read may have more: the browser polls again at once.
      if (seen.size < ids.size) expect(body.more).toBe(true);
      cursor = body.cursor;
    }
    expect(seen).toEqual(ids);
  });

  it('answers no subresource request from another site, though a link from one still opens the page', async () => {
    api = await makeApi();
    const { id } = await api.createAgent(api.keyA);
    const { cookie } = await signIn(api.app, api.keyA);
    // An <img>, <script> or fetch() from a page of the same site on another port carries the
    // cookie (SameSite ignores ports): it must not open streams or fan out polls for it.
    for (const path of [
      '/console/timeline/events',
      `/console/agents/${id}/events/stream`,
      `/console/agents/${id}/events.ndjson`,
      '/console/assets/timeline.js',
    ]) {
      for (const site of ['same-site', 'cross-site']) {
        const res = await api.app.request(path, {
          headers: { cookie, 'sec-fetch-site': site, 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image' },
        });
        expect(res.status, `${path} ${site}`).toBe(403);
        await res.body?.cancel();
      }
    }
    const link = await api.app.request(`/console/agents/${id}`, {
      headers: {
        cookie,
        'sec-fetch-site': 'same-site',
        'sec-fetch-mode': 'navigate',
        'sec-fetch-dest': 'document',
      },
    });
    expect(link.status).toBe(200);
    // Its own pages' requests pass.
    const own = await api.app.request('/console/timeline/events', {
      headers: {
        cookie,
        'sec-fetch-site': 'same-origin',
        'sec-fetch-mode': 'cors',
        'sec-fetch-dest': 'empty',
      },
    });
    expect(own.status).toBe(200);
  });

  it('ends the event streams a session opened when it signs out, and only those', async () => {
    api = await makeApi();
    const { id } = await api.createAgent(api.keyA);
    await api.call(api.keyA, id, [
      { id: 'w', name: 'write', arguments: { file_path: 'a.txt', content: 'a' } },
    ]);
    const mine = await signIn(api.app, api.keyA);
    const other = await signIn(api.app, api.keyA);
    const open = async (cookie: string) => {
      const res = await api.app.request(`/console/agents/${id}/events/stream`, { headers: { cookie } });
      expect(res.status).toBe(200);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      expect((await reader.read()).done).toBe(false); // the log's replay
      return reader;
    };
    const ending = await open(mine.cookie);
    const staying = await open(other.cookie);
    const out = await api.app.request('/console/signout', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN, cookie: mine.cookie },
      body: form({ csrf: mine.csrf }),
    });
    expect(out.status).toBe(303);
    // Read to its end: without the fix this waits for an event that never comes (the test's timeout).
    for (;;) if ((await ending.read().catch(() => ({ done: true }))).done) break;
    // The other session's stream is still open: a new event arrives on it.
    await api.call(api.keyA, id, [
      { id: 'w2', name: 'write', arguments: { file_path: 'b.txt', content: 'b' } },
    ]);
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('b.txt')) {
      const chunk = await staying.read();
      expect(chunk.done).toBe(false);
      text += decoder.decode(chunk.value);
    }
    await staying.cancel();
  });

  it('ends the session a browser held when it signs in again, and never keeps a cookie it sent', async () => {
    api = await makeApi();
    const first = await signIn(api.app, api.keyA);
    const again = await api.app.request('/console/signin', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN, cookie: first.cookie },
      body: form({ key: api.keyB, role: 'tenant' }),
    });
    expect(again.status).toBe(303);
    const cookie = (again.headers.get('set-cookie') ?? '').split(';')[0] as string;
    expect(cookie).toMatch(/^dsh_console=/);
    expect(cookie).not.toBe(first.cookie);
    expect((await api.app.request('/console/agents', { headers: { cookie: first.cookie } })).status).toBe(
      303,
    );
    expect((await api.app.request('/console/agents', { headers: { cookie } })).status).toBe(200);
  });
});

describe('the terminal page against hostile output', () => {
  it("opens only http(s) links from a terminal's output (OSC 8), never xterm's any-scheme default", () => {
    const source = readFileSync(new URL('../../../host/console/assets/terminal.js', import.meta.url), 'utf8');
    expect(source).toMatch(/new Terminal\(\{[^}]*\blinkHandler\b/);
    expect(source).toContain("url.protocol !== 'http:' && url.protocol !== 'https:'");
    expect(source).toContain('noopener');
  });
});
