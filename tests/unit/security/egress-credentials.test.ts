// Issue 28: "Credentials travel in clear text." A credential the tenant set for a host was added to
// plain http:// requests by web_fetch and by the sandbox's proxy. Now a credential goes only over
// TLS unless it says `allowInsecure: true`: a loopback plain-HTTP server given a credential never
// sees it (through web_fetch, and through the proxy as curl would send it), an HTTPS one does, and
// with the opt-in the plain one does too. The opt-in is part of the API's schema and shown back.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { duplexPair } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issuerOf, mintCa, mintLeaf } from '../../../host/egress/intercept/x509.ts';
import { createProxyServer } from '../../../host/egress/proxy/server.ts';
import type { EgressCaller } from '../../../host/egress/types.ts';
import { type Api, type Loose, makeApi } from '../api/harness.ts';

const SECRET = 'Bearer cleartext-secret-51c0';
const ca = mintCa('credentials test CA');
const leaf = mintLeaf(ca, issuerOf(ca), '127.0.0.1', 2);
/** The authorization header each server saw, by site, in order. */
const seen: Array<{ site: string; authorization: string | undefined }> = [];
const record = (site: string) => (req: IncomingMessage, res: import('node:http').ServerResponse) => {
  seen.push({ site, authorization: req.headers.authorization });
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end(`hello from ${site}\n`);
};
let plain: Server;
let secure: Server;
let plainPort = 0;
let securePort = 0;
let api: Api;

const listen = (server: Server): Promise<number> =>
  new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );

beforeAll(async () => {
  plain = createServer(record('plain'));
  secure = createHttpsServer({ key: leaf.keyPem, cert: leaf.certPem }, record('secure'));
  plainPort = await listen(plain);
  securePort = await listen(secure);
  api = await makeApi({}, { egress: { testHosts: [{ ip: '127.0.0.1' }], ca: ca.certPem } });
});
afterAll(async () => {
  await api?.close();
  plain?.close();
  secure?.close();
});

const putEgress = (allowInsecure?: boolean) =>
  api.request(api.keyA, 'PUT', '/v1/egress', {
    allow: [{ host: '127.0.0.1', ports: [plainPort, securePort] }],
    credentials: [
      {
        name: 'site',
        host: '127.0.0.1',
        header: 'Authorization',
        value: SECRET,
        ...(allowInsecure === undefined ? {} : { allowInsecure }),
      },
    ],
  });

const webFetch = async (agentId: string, url: string): Promise<Loose> =>
  (await api.call(api.keyA, agentId, [{ id: 'f', name: 'web_fetch', arguments: { url } }])).json.results[0];

/** One plain-HTTP request through the sandbox's proxy server (as curl sends it with http_proxy set). */
async function throughProxy(caller: EgressCaller, url: string): Promise<string> {
  const proxy = createProxyServer({ gateway: api.egress?.gateway as NonNullable<Api['egress']>['gateway'] });
  const [client, server] = duplexPair();
  proxy.handle(server, caller);
  const answer = new Promise<string>((resolve) => {
    let text = '';
    client.on('data', (b: Buffer) => {
      text += b.toString('latin1');
      if (/\r\n\r\n[\s\S]*\n$/.test(text)) resolve(text);
    });
    client.on('close', () => resolve(text));
  });
  client.write(`GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nConnection: close\r\n\r\n`);
  const text = await answer;
  client.destroy();
  return text;
}

describe('credentials go only over TLS unless they say allowInsecure', () => {
  it('web_fetch: a plain-HTTP host never sees the credential, an HTTPS one does; the audit says what was kept back', async () => {
    expect((await putEgress()).status).toBe(200);
    const agent = await api.createAgent(api.keyA, { fetch: true });
    seen.length = 0;
    const insecure = await webFetch(agent.id, `http://127.0.0.1:${plainPort}/page`);
    expect(insecure.ok, JSON.stringify(insecure)).toBe(true);
    const tls = await webFetch(agent.id, `https://127.0.0.1:${securePort}/page`);
    expect(tls.ok, JSON.stringify(tls)).toBe(true);
    expect(seen).toEqual([
      { site: 'plain', authorization: undefined },
      { site: 'secure', authorization: SECRET },
    ]);
    const audit = (await api.store.events.list(agent.id))
      .filter((e) => e.type === 'egress')
      .map((e) => e.data as Loose);
    expect(audit[0]).toMatchObject({ port: plainPort, withheld: ['site'] });
    expect(audit[0].credentials).toBeUndefined();
    expect(audit[1]).toMatchObject({ port: securePort, credentials: ['site'] });
  });

  it('the proxy: a plain-HTTP request through it goes without the credential', async () => {
    expect((await putEgress()).status).toBe(200);
    const agent = await api.createAgent(api.keyA);
    const tenantId = ((await api.store.tenants.verifyKey(api.keyA)) as Loose).id as string;
    seen.length = 0;
    const answer = await throughProxy(
      { tenantId, agentId: agent.id, sessionId: agent.id, via: 'proxy' },
      `http://127.0.0.1:${plainPort}/hello`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(seen).toEqual([{ site: 'plain', authorization: undefined }]);
  });

  it('with allowInsecure: true, plain HTTP gets it too (web_fetch and the proxy), and the API shows the opt-in', async () => {
    const put = await putEgress(true);
    expect(put.status).toBe(200);
    expect(put.json.credentials).toEqual([
      { name: 'site', host: '127.0.0.1', header: 'Authorization', allowInsecure: true },
    ]);
    const agent = await api.createAgent(api.keyA, { fetch: true });
    const tenantId = ((await api.store.tenants.verifyKey(api.keyA)) as Loose).id as string;
    seen.length = 0;
    expect((await webFetch(agent.id, `http://127.0.0.1:${plainPort}/page`)).ok).toBe(true);
    await throughProxy(
      { tenantId, agentId: agent.id, sessionId: agent.id, via: 'proxy' },
      `http://127.0.0.1:${plainPort}/hello`,
    );
    expect(seen).toEqual([
      { site: 'plain', authorization: SECRET },
      { site: 'plain', authorization: SECRET },
    ]);
    // Leaving it out again turns it off (PUT replaces the settings whole).
    expect((await putEgress()).json.credentials).toEqual([
      { name: 'site', host: '127.0.0.1', header: 'Authorization' },
    ]);
  });

  it('the opt-in is a boolean, validated by the API', async () => {
    for (const allowInsecure of ['yes', 1, null]) {
      const res = await api.request(api.keyA, 'PUT', '/v1/egress', {
        allow: [],
        credentials: [{ name: 'x', host: 'a.example', header: 'X-Key', value: 'v', allowInsecure }],
      });
      expect(res.status, JSON.stringify(allowInsecure)).toBe(400);
    }
  });
});
