// The console's security, in-process over the memory provider: nothing without a session, the
// session cookie's shape, tenant isolation through the API, CSRF (origin and token), untrusted
// text rendered as text, and the security headers on every console response.
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CSP } from '../../../host/console/guard.ts';
import { consoleRoutes } from '../../../host/console/index.ts';
import { createSessions } from '../../../host/console/sessions.ts';
import { type Api, makeApi } from '../api/harness.ts';

const ORIGIN = 'http://localhost';
let api: Api;

beforeEach(async () => {
  api = await makeApi();
});
afterEach(() => api.close());

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** Signs in with `key`; the session cookie ("dsh_console=…") and the page's CSRF token. */
const signIn = async (key: string): Promise<{ cookie: string; csrf: string }> => {
  const res = await api.app.request('/console/signin', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
    body: form({ key, role: 'tenant' }),
  });
  expect(res.status).toBe(303);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const page = await (await api.app.request('/console/agents', { headers: { cookie } })).text();
  const csrf = /name="csrf-token" content="([^"]+)"/.exec(page)?.[1] ?? '';
  return { cookie, csrf };
};

const get = (path: string, cookie?: string) => api.app.request(path, { headers: cookie ? { cookie } : {} });

describe('the console without a session', () => {
  it('answers no page, asset, stream or socket: GETs go to the sign-in page, the rest is refused', async () => {
    const { id } = await api.createAgent(api.keyA);
    const paths = [
      '/console',
      '/console/agents',
      `/console/agents/${id}`,
      `/console/agents/${id}/events/stream`,
      `/console/agents/${id}/events.ndjson`,
      `/console/agents/${id}/files?path=.`,
      `/console/agents/${id}/files/download?path=a.txt`,
      `/console/agents/${id}/terminal?tid=t1`,
      '/console/operator',
      '/console/timeline',
      '/console/timeline/events',
      '/console/assets/timeline.js',
      '/console/assets/xterm.mjs',
      '/console/nothing-here',
    ];
    for (const path of paths) {
      const res = await get(path);
      expect([res.status, res.headers.get('location')], path).toEqual([303, '/console/signin']);
      expect(await res.text(), path).not.toContain(id);
      // A made-up cookie is no session either.
      expect((await get(path, 'dsh_console=forged')).status, path).toBe(303);
    }
    const socket = await api.app.request(`/console/agents/${id}/terminals/t1/socket`, {
      headers: { upgrade: 'websocket', connection: 'Upgrade', origin: ORIGIN },
    });
    expect(socket.status).toBe(401);
    const answer = await api.app.request(`/console/agents/${id}/requests/req_x`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
      body: form({ kind: 'approval', decision: 'allow' }),
    });
    expect(answer.status).toBe(401);
  });

  it('serves the sign-in page styled, its stylesheet and the icon, and nothing else of the assets', async () => {
    const signin = await (await get('/console/signin')).text();
    expect(signin).toContain('<link rel="stylesheet" href="/console/assets/console.css"/>');
    expect(signin).toContain('<link rel="icon" href="/favicon.ico"/>');
    const css = await get('/console/assets/console.css');
    expect([css.status, css.headers.get('content-type')]).toEqual([200, 'text/css; charset=utf-8']);
    expect(await css.text()).toContain('body.bare main');
    const icon = await get('/favicon.ico');
    expect([icon.status, icon.headers.get('content-type')]).toEqual([200, 'image/x-icon']);
    const bytes = Buffer.from(await icon.arrayBuffer());
    // An ICO header with one 16×16 32-bit image whose bytes are all there.
    expect([
      bytes.readUInt16LE(2),
      bytes.readUInt16LE(4),
      bytes[6],
      bytes[7],
      bytes.readUInt16LE(12),
    ]).toEqual([1, 1, 16, 16, 32]);
    expect(bytes.length).toBe(bytes.readUInt32LE(18) + bytes.readUInt32LE(14));
    expect(icon.headers.get('content-security-policy')).toBe(CSP);
    for (const name of ['xterm.mjs', 'xterm-csp.js', 'terminal.js', 'xterm.css'])
      expect((await get(`/console/assets/${name}`)).status, name).toBe(303);
  });

  it('refuses a wrong key and signs in with a tenant key into an httpOnly, SameSite=Strict cookie holding no key', async () => {
    const wrong = await api.app.request('/console/signin', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
      body: form({ key: 'dsk_not-a-real-key-000000000000000000000', role: 'tenant' }),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    const res = await api.app.request('/console/signin', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
      body: form({ key: api.keyA, role: 'tenant' }),
    });
    const cookie = res.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^dsh_console=[A-Za-z0-9_-]{43};/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).toContain('Path=/console');
    expect(cookie).not.toContain(api.keyA);
    expect(cookie).not.toContain('Secure'); // plain http here; https gets Secure
    const secure = await api.app.request('https://localhost/console/signin', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://localhost' },
      body: form({ key: api.keyA, role: 'tenant' }),
    });
    expect(secure.headers.get('set-cookie')).toContain('Secure');
  });

  it('ends a session at sign-out and at its expiry', async () => {
    const { cookie, csrf } = await signIn(api.keyA);
    expect((await get('/console/agents', cookie)).status).toBe(200);
    const out = await api.app.request('/console/signout', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN, cookie },
      body: form({ csrf }),
    });
    expect(out.status).toBe(303);
    expect((await get('/console/agents', cookie)).status).toBe(303);

    let now = 0;
    const sessions = createSessions({ ttlMs: 1000, now: () => now });
    const session = sessions.open('tenant', 'k', 't1');
    expect(sessions.get(session.id)).toBe(session);
    now = 1000;
    expect(sessions.get(session.id)).toBeUndefined();
  });

  it("bounds the sessions: one key's or one tenant's sign-ins end only its own oldest sessions", () => {
    const sessions = createSessions({ perKey: 2, perOwner: 3, max: 5 });
    const other = sessions.open('tenant', 'other', 't2');
    const first = sessions.open('tenant', 'k', 't1');
    const second = sessions.open('tenant', 'k', 't1');
    const third = sessions.open('tenant', 'k', 't1');
    expect([other, first, second, third].map((s) => sessions.get(s.id) !== undefined)).toEqual([
      true,
      false,
      true,
      true,
    ]);
    // Another key of the same tenant: past the tenant's bound its oldest session ends, no one else's.
    const fourth = sessions.open('tenant', 'k2', 't1');
    const fifth = sessions.open('tenant', 'k2', 't1');
    expect([other, second, third, fourth, fifth].map((s) => sessions.get(s.id) !== undefined)).toEqual([
      true,
      false,
      true,
      true,
      true,
    ]);
    // Past the overall bound the oldest session of the tenant holding the most ends (round 5:
    // before, the oldest of anyone's, so tenants within their shares signed out a quiet one).
    sessions.open('tenant', 'third', 't3');
    sessions.open('tenant', 'fourth', 't4');
    expect(sessions.get(other.id)).toBeDefined();
    expect(sessions.get(third.id)).toBeUndefined();
  });
});

describe('one tenant signing in without end', () => {
  it("ends none of another tenant's sessions, even with ever new keys (made, used, revoked)", async () => {
    // The console over the harness's API, with a small overall bound (the default is 10,000).
    const sessions = createSessions({ max: 80 });
    const console = consoleRoutes({ fetch: (request, env) => api.app.fetch(request, env), sessions });
    const signInTo = async (key: string) => {
      const res = await console.request('/console/signin', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
        body: form({ key, role: 'tenant' }),
      });
      expect(res.status).toBe(303);
      return (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
    };
    const victim = await signInTo(api.keyA);
    // Tenant B's sign-ins: each key as often as one key's bound admits, then revoked for a new one.
    for (let round = 0; round < 3; round++) {
      const made = await api.app.request('/v1/keys', {
        method: 'POST',
        headers: { authorization: `Bearer ${api.keyB}`, 'content-type': 'application/json' },
        body: '{}',
      });
      const { id, apiKey } = (await made.json()) as { id: string; apiKey: string };
      for (let i = 0; i < 32; i++) await signInTo(apiKey);
      const revoked = await api.app.request(`/v1/keys/${id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${api.keyB}` },
      });
      expect(revoked.status).toBe(204);
    }
    const still = await console.request('/console/agents', { headers: { cookie: victim } });
    expect(still.status).toBe(200);
  });
});

describe('the console signed in', () => {
  it("shows the tenant's agents and answers 404 for another tenant's agent on every page", async () => {
    const mine = await api.createAgent(api.keyA, { preset: 'standard', sandbox: { memoryMb: 256 } });
    const theirs = await api.createAgent(api.keyB);
    const { cookie } = await signIn(api.keyA);
    const list = await (await get('/console/agents', cookie)).text();
    expect(list).toContain(mine.id);
    expect(list).toContain('memory 256 MiB');
    expect(list).not.toContain(theirs.id);
    for (const path of [
      `/console/agents/${theirs.id}`,
      `/console/agents/${theirs.id}/events/stream`,
      `/console/agents/${theirs.id}/events.ndjson`,
      `/console/agents/${theirs.id}/files?path=.`,
      `/console/agents/${theirs.id}/files/download?path=a.txt`,
      `/console/agents/${theirs.id}/terminal?tid=t1`,
    ]) {
      expect((await get(path, cookie)).status, path).toBe(404);
    }
    // The terminal socket goes through the public route's checks: their agent is its 404.
    const socket = await api.app.request(`/console/agents/${theirs.id}/terminals/t1/socket`, {
      headers: { cookie, upgrade: 'websocket', connection: 'Upgrade', origin: ORIGIN },
    });
    expect(socket.status).toBe(404);
  });

  it('refuses a forged cross-site POST and a POST without the session token', async () => {
    const { id } = await api.createAgent(api.keyA);
    const { cookie, csrf } = await signIn(api.keyA);
    const post = (path: string, headers: Record<string, string>, fields: Record<string, string>) =>
      api.app.request(path, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, ...headers },
        body: form(fields),
      });
    const evil = { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' };
    expect((await post('/console/signout', evil, { csrf })).status).toBe(403);
    expect(
      (await post(`/console/agents/${id}/requests/req_x`, evil, { csrf, kind: 'approval' })).status,
    ).toBe(403);
    expect((await post('/console/signout', { origin: ORIGIN }, {})).status).toBe(403);
    expect((await post('/console/signout', { origin: ORIGIN }, { csrf: `${csrf}x` })).status).toBe(403);
    // Login CSRF: a sign-in posted from another site is refused before the key is looked at.
    expect((await post('/console/signin', evil, { key: api.keyA })).status).toBe(403);
    // The session survived every forgery.
    expect((await get('/console/agents', cookie)).status).toBe(200);
    // A socket opened from another site is refused before it reaches the terminal route.
    const socket = await api.app.request(`/console/agents/${id}/terminals/t1/socket`, {
      headers: { cookie, upgrade: 'websocket', connection: 'Upgrade', origin: 'https://evil.example' },
    });
    expect(socket.status).toBe(403);
  });

  it('renders a hostile file name and file content as text', async () => {
    const { id } = await api.createAgent(api.keyA);
    const name = '<img src=x onerror=alert(1)>';
    const put = await api.request(
      api.keyA,
      'PUT',
      `/v1/agents/${id}/files?path=${encodeURIComponent(name)}`,
      '<script>alert(2)</script>',
    );
    expect(put.status).toBe(200);
    const { cookie } = await signIn(api.keyA);
    const dir = await (await get(`/console/agents/${id}/files?path=.`, cookie)).text();
    expect(dir).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(dir).not.toContain('<img');
    const file = await (
      await get(`/console/agents/${id}/files?path=${encodeURIComponent(name)}`, cookie)
    ).text();
    expect(file).toContain('&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(file).not.toContain('<script>alert');
    const download = await get(
      `/console/agents/${id}/files/download?path=${encodeURIComponent(name)}`,
      cookie,
    );
    expect(download.headers.get('content-type')).toBe('application/octet-stream');
    expect(download.headers.get('content-disposition')).toBe(
      'attachment; filename="_img_src_x_onerror_alert_1__"',
    );
    expect(await download.text()).toBe('<script>alert(2)</script>');
  });

  it('never writes data into the page as HTML from the browser scripts', () => {
    for (const asset of ['timeline.js', 'terminal.js']) {
      const source = readFileSync(new URL(`../../../host/console/assets/${asset}`, import.meta.url), 'utf8');
      expect(source, asset).not.toMatch(
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/,
      );
    }
  });

  it('puts the CSP and the other security headers on every console response', async () => {
    const { id } = await api.createAgent(api.keyA);
    const { cookie } = await signIn(api.keyA);
    const other = await api.createAgent(api.keyB);
    const responses = [
      await get('/console/signin'),
      await get('/console/agents'),
      await get('/console/agents', cookie),
      await get(`/console/agents/${id}`, cookie),
      await get(`/console/agents/${id}/events.ndjson`, cookie),
      await get(`/console/agents/${other.id}`, cookie),
      await get('/console/assets/timeline.js', cookie),
      await get('/console/assets/xterm.mjs', cookie),
      await get('/console/assets/nothing.js', cookie),
      await get('/console/nowhere', cookie),
    ];
    for (const res of responses) {
      expect(res.headers.get('content-security-policy'), res.url).toBe(CSP);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('same-origin');
    }
    expect(CSP).toContain("default-src 'self'");
    expect(CSP).toContain("script-src 'self'");
    expect(CSP).not.toContain('unsafe-inline');
    expect(CSP).toContain("frame-ancestors 'none'");
    const page = await (await get(`/console/agents/${id}`, cookie)).text();
    // No inline script: every script element has a src.
    expect(page.match(/<script(?![^>]*\ssrc=)[^>]*>/g)).toBeNull();
  });

  it("admits the terminal page's own <style> elements by a nonce new on every response, and nothing more", async () => {
    const { id } = await api.createAgent(api.keyA);
    const { cookie } = await signIn(api.keyA);
    const nonces: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await get(`/console/agents/${id}/terminal?tid=t1`, cookie);
      const csp = res.headers.get('content-security-policy') ?? '';
      const nonce = /style-src 'self' 'nonce-([A-Za-z0-9_-]{22})'/.exec(csp)?.[1] as string;
      expect(nonce, csp).toBeDefined();
      expect(csp).toBe(CSP.replace("style-src 'self'", `style-src 'self' 'nonce-${nonce}'`));
      expect(csp).not.toContain('unsafe');
      // The page hands the nonce only to the script that gives it to xterm's <style> elements.
      const page = await res.text();
      expect(page).toContain(`<script type="module" src="/console/assets/xterm-csp.js" nonce="${nonce}"`);
      expect(page.split(nonce).length).toBe(2);
      nonces.push(nonce);
    }
    expect(nonces[0]).not.toBe(nonces[1]);
    // Any other page keeps the policy without a nonce.
    expect((await get(`/console/agents/${id}`, cookie)).headers.get('content-security-policy')).toBe(CSP);
  });
});
