// Egress through the public API (issue 19): a tenant sets its allowlist with PUT /v1/egress (its
// credentials shown back by name only), and its agents' web_fetch and web_search reach loopback
// servers standing in for the internet (admitted by the test switch, still decided by the
// allowlist). web_fetch returns a page's article as markdown, refuses what the list does not admit
// and redirects to refused hosts with EGRESS_DENIED, and a credential reaches the upstream but
// never any API response or event.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Api, type Loose, makeApi } from './harness.ts';

const SECRET = 'Bearer upstream-secret-7f3a9c';
let site: Server;
let port: number;
let searx: Server;
let searxPort: number;
let api: Api;
const received: Array<{ path: string; authorization?: string }> = [];

const ARTICLE = `<!doctype html><html><head><title>Reading in the sandbox</title></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article><h1>Reading in the sandbox</h1>
<p>Agents read documentation through the egress gateway, which checks every destination against the tenant's allowlist before a single byte leaves.</p>
<p>The page is parsed in a worker thread, its article picked out by Readability, and turned into <a href="/markdown">markdown</a> by Turndown.</p>
<ul><li>default deny</li><li>pinned addresses</li></ul></article>
<footer>Copyright nobody</footer><script>window.evil = 1</script></body></html>`;

beforeAll(async () => {
  site = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    received.push({
      path: url.pathname,
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    });
    if (url.pathname === '/article') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(ARTICLE);
    }
    if (url.pathname === '/echo') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end(`you sent: ${req.headers.authorization ?? 'nothing'}`);
    }
    if (url.pathname === '/away') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      return res.end();
    }
    if (url.pathname === '/image') {
      res.writeHead(200, { 'content-type': 'image/png' });
      return res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('no such page');
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  port = (site.address() as AddressInfo).port;
  searx = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const q = url.searchParams.get('q') ?? '';
    if (url.pathname !== '/search' || url.searchParams.get('format') !== 'json') {
      res.writeHead(400);
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        query: q,
        results: [
          {
            url: `https://docs.example/${encodeURIComponent(q)}`,
            title: `About ${q}`,
            content: `All on ${q}.`,
          },
          { url: 'javascript:alert(1)', title: 'dropped', content: 'not http' },
        ],
      }),
    );
  });
  await new Promise<void>((r) => searx.listen(0, '127.0.0.1', r));
  searxPort = (searx.address() as AddressInfo).port;
  api = await makeApi({}, { egress: { testHosts: [{ ip: '127.0.0.1' }] } });
});

afterAll(async () => {
  await api?.close();
  site?.close();
  searx?.close();
});

const putEgress = (body: unknown, key = api.keyA) => api.request(key, 'PUT', '/v1/egress', body);
const fetchOne = async (agentId: string, url: string): Promise<Loose> =>
  (await api.call(api.keyA, agentId, [{ id: 'f1', name: 'web_fetch', arguments: { url } }])).json.results[0];

describe('egress settings over the API', () => {
  it('start empty (default deny), keep credentials by name only, and keep a value sent without one', async () => {
    const empty = await api.request(api.keyA, 'GET', '/v1/egress');
    expect(empty.status).toBe(200);
    expect(empty.json).toMatchObject({ allow: [], credentials: [] });
    const put = await putEgress({
      allow: [{ host: '127.0.0.1', ports: [port] }, { host: '*.Example.COM' }],
      // The loopback site is plain HTTP: the credential opts in (it goes over TLS only otherwise).
      credentials: [
        { name: 'site', host: '127.0.0.1', header: 'Authorization', value: SECRET, allowInsecure: true },
      ],
    });
    expect(put.status).toBe(200);
    expect(put.json.allow).toEqual([{ host: '127.0.0.1', ports: [port] }, { host: '*.example.com' }]);
    expect(put.json.credentials).toEqual([
      { name: 'site', host: '127.0.0.1', header: 'Authorization', allowInsecure: true },
    ]);
    expect(put.text).not.toContain('upstream-secret');
    // Sending back what GET showed keeps the secret.
    const again = await putEgress({ allow: put.json.allow, credentials: put.json.credentials });
    expect(again.status).toBe(200);
    expect(
      JSON.stringify(await api.store.egress.get(((await api.store.tenants.verifyKey(api.keyA)) as Loose).id)),
    ).toContain('upstream-secret');
    expect((await api.request(api.keyA, 'GET', '/v1/egress')).text).not.toContain('upstream-secret');
    // Another tenant sees its own (empty) settings.
    expect((await api.request(api.keyB, 'GET', '/v1/egress')).json.allow).toEqual([]);
  });

  it('refuses what it cannot enforce', async () => {
    for (const body of [
      { allow: [{ host: 'user@host' }] },
      { allow: [], credentials: [{ name: 'x', host: 'a.com', header: 'Host', value: 'v' }] },
      { allow: [], credentials: [{ name: 'new', host: 'a.com', header: 'X-Key' }] },
      { allow: [], search: { provider: 'searxng', url: 'http://u:p@search.example/' } },
    ]) {
      const res = await putEgress(body, api.keyB);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect(
      (await putEgress({ allow: [], budget: { connections: 1_000_000 } }, api.keyB)).json.error.code,
    ).toBe('LIMIT_EXCEEDED');
    expect((await api.request(undefined, 'GET', '/v1/egress')).status).toBe(401);
  });
});

describe('web_fetch', () => {
  it('is offered only to agents created with fetch: true', async () => {
    const plain = await api.createAgent(api.keyA);
    const names = (await api.request(api.keyA, 'GET', `/v1/agents/${plain.id}/tools`)).json.tools.map(
      (t: Loose) => t.name,
    );
    expect(names).not.toContain('web_fetch');
    const fetching = await api.createAgent(api.keyA, { fetch: true });
    const tools = (await api.request(api.keyA, 'GET', `/v1/agents/${fetching.id}/tools`)).json
      .tools as Loose[];
    expect(tools.find((t) => t.name === 'web_fetch')).toMatchObject({
      parameters: { type: 'object', required: ['url'] },
    });
  });

  it("returns a loopback page's article as markdown", async () => {
    const agent = await api.createAgent(api.keyA, { fetch: true });
    const result = await fetchOne(agent.id, `http://127.0.0.1:${port}/article`);
    expect(result.ok).toBe(true);
    expect(result.value).toMatchObject({
      status: 200,
      contentType: 'text/html',
      title: 'Reading in the sandbox',
    });
    const text = result.content[0].text as string;
    expect(text).toContain('# Reading in the sandbox');
    expect(text).toContain("checks every destination against the tenant's allowlist");
    expect(text).toContain(`[markdown](http://127.0.0.1:${port}/markdown)`);
    expect(text).toMatch(/- +default deny/);
    expect(text).not.toContain('window.evil');
    expect(text).not.toContain('Copyright nobody');
  });

  it('refuses a host the allowlist does not admit, a port it does not, and internal addresses, with EGRESS_DENIED', async () => {
    const agent = await api.createAgent(api.keyA, { fetch: true });
    for (const url of [
      'http://other.example.org/',
      `http://127.0.0.1:${port + 1}/`,
      'http://169.254.169.254/latest/meta-data/',
      'http://a.example.com@127.0.0.1/',
    ]) {
      const result = await fetchOne(agent.id, url);
      expect(result.ok, url).toBe(false);
      expect(result.error.code, url).toBe('EGRESS_DENIED');
    }
    const notText = await fetchOne(agent.id, `http://127.0.0.1:${port}/image`);
    expect(notText.error.code).toBe('BINARY_FILE');
  });

  it('refuses a redirect to a refused host', async () => {
    const agent = await api.createAgent(api.keyA, { fetch: true });
    const result = await fetchOne(agent.id, `http://127.0.0.1:${port}/away`);
    expect(result.error).toMatchObject({ code: 'EGRESS_DENIED' });
    expect(result.error.message).toContain('169.254.169.254');
  });

  it("an agent's egress narrows the tenant's list", async () => {
    const agent = await api.createAgent(api.keyA, {
      fetch: true,
      egress: { allow: [{ host: 'docs.example.com' }] },
    });
    expect((await fetchOne(agent.id, `http://127.0.0.1:${port}/article`)).error.code).toBe('EGRESS_DENIED');
    const bad = await api.request(api.keyA, 'POST', '/v1/agents', { egress: { allow: [{ host: 'a:b' }] } });
    expect(bad.status).toBe(400);
  });

  it('a credential reaches the upstream but no API response or event', async () => {
    const agent = await api.createAgent(api.keyA, { fetch: true });
    const result = await fetchOne(agent.id, `http://127.0.0.1:${port}/echo`);
    expect(received.at(-1)).toEqual({ path: '/echo', authorization: SECRET });
    expect(result.ok).toBe(true);
    expect(result.content[0].text).toContain('you sent: [credential site]');
    const responses = [
      JSON.stringify(result),
      (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`)).text,
      (await api.request(api.keyA, 'GET', '/v1/egress')).text,
      (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}`)).text,
    ];
    for (const text of responses) expect(text).not.toContain('upstream-secret');
    const events = (await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/events`)).json
      .events as Loose[];
    const egress = events.filter((e) => e.type === 'egress');
    expect(egress.at(-1)).toMatchObject({
      callId: 'f1',
      data: {
        via: 'web_fetch',
        decision: 'allow',
        host: '127.0.0.1',
        ip: '127.0.0.1',
        port,
        method: 'GET',
        status: 200,
        credentials: ['site'],
      },
    });
  });
});

describe('web_search', () => {
  it('is offered only where a provider is configured, and answers from a SearXNG-format server', async () => {
    const agent = await api.createAgent(api.keyB);
    const before = (await api.request(api.keyB, 'GET', `/v1/agents/${agent.id}/tools`)).json.tools as Loose[];
    expect(before.map((t) => t.name)).not.toContain('web_search');
    // Tenant b points at its own provider: reached through the gateway, so its allowlist must admit it.
    const searchUrl = `http://127.0.0.1:${searxPort}/`;
    const egressB = await putEgress({ allow: [], search: { provider: 'searxng', url: searchUrl } }, api.keyB);
    expect(egressB.status).toBe(200);
    const after = (await api.request(api.keyB, 'GET', `/v1/agents/${agent.id}/tools`)).json.tools as Loose[];
    expect(after.map((t) => t.name)).toContain('web_search');
    const denied = (
      await api.call(api.keyB, agent.id, [
        { id: 's1', name: 'web_search', arguments: { queries: ['cordis'] } },
      ])
    ).json.results[0];
    expect(denied.error.code).toBe('EGRESS_DENIED');
    await putEgress(
      { allow: [{ host: '127.0.0.1', ports: [searxPort] }], search: { provider: 'searxng', url: searchUrl } },
      api.keyB,
    );
    const found = (
      await api.call(api.keyB, agent.id, [
        { id: 's2', name: 'web_search', arguments: { queries: ['cordis plugins', 'sqlite'] } },
      ])
    ).json.results[0];
    expect(found.ok).toBe(true);
    expect(found.value.results).toEqual([
      {
        query: 'cordis plugins',
        results: [
          {
            title: 'About cordis plugins',
            url: 'https://docs.example/cordis%20plugins',
            snippet: 'All on cordis plugins.',
          },
        ],
      },
      {
        query: 'sqlite',
        results: [{ title: 'About sqlite', url: 'https://docs.example/sqlite', snippet: 'All on sqlite.' }],
      },
    ]);
    expect(found.content[0].text).toContain(
      '## cordis plugins\n1. [About cordis plugins](https://docs.example/cordis%20plugins)',
    );
  });

  it("uses the operator's provider (DSH_SEARCH_SEARXNG_URL) for tenants without one", async () => {
    const operator = await makeApi({}, { egress: { searxngUrl: `http://127.0.0.1:${searxPort}` } });
    try {
      const agent = await operator.createAgent(operator.keyA);
      const result = (
        await operator.call(operator.keyA, agent.id, [
          { id: 's1', name: 'web_search', arguments: { queries: ['x'] } },
        ])
      ).json.results[0];
      expect(result.value.results[0].results[0]).toMatchObject({ title: 'About x' });
    } finally {
      await operator.close();
    }
  });
});
