// The gateway against loopback servers standing in for the internet (the test switch admits
// 127.0.0.1, the allowlist still decides): names are resolved by the gateway and the address it
// checked is the one it connects to; internal addresses, redirects to refused hosts and userinfo
// tricks are refused and audited; credentials reach the upstream and show only by name; budgets hold.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { duplexPair } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEgressGateway, type Lookup } from '../../../host/egress/gateway.ts';
import type { EgressCaller, TenantEgress } from '../../../host/egress/types.ts';
import { createMemoryEventLog } from '../../../host/store/index.ts';
import type { SessionEvent } from '../../../host/store/types.ts';

let server: Server;
let port: number;
const seen: Array<{ url: string; headers: Record<string, unknown>; host: string }> = [];
let tcp: TcpServer;
let tcpPort: number;

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers, host: req.headers.host ?? '' });
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/redirect') {
      res.writeHead(302, { location: url.searchParams.get('to') ?? '/' });
      return res.end();
    }
    if (url.pathname === '/big') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end('x'.repeat(100_000));
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`hello ${req.method} ${url.pathname}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  tcp = createTcpServer((socket) => socket.pipe(socket));
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  tcpPort = (tcp.address() as AddressInfo).port;
});
afterAll(async () => {
  server.close();
  tcp.close();
});

/** A resolver for names of the test's own "internet". */
const names: Record<string, string[]> = {
  'site.test': ['127.0.0.1'],
  'other.test': ['127.0.0.1'],
  'internal.test': ['10.0.0.5'],
  'mixed.test': ['127.0.0.1', '192.168.1.10'],
  'metadata.test': ['169.254.169.254'],
};
const lookup: Lookup = async (host) => {
  const found = names[host];
  if (found === undefined) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const setup = (settings: Partial<TenantEgress>, agentRules?: TenantEgress['allow'], budgetBytes?: number) => {
  const events = createMemoryEventLog(budgetBytes === undefined ? {} : { budgetBytes, tenantOf: () => 't1' });
  const gateway = createEgressGateway({
    settingsOf: async () => ({ allow: [], credentials: [], ...settings }),
    agentRulesOf: async () => agentRules,
    events,
    maxBudget: { connections: 8, bytesPerHour: 1_000_000 },
    testHosts: [{ ip: '127.0.0.1' }],
    lookup,
  });
  const caller: EgressCaller = { tenantId: 't1', agentId: 'a1', sessionId: 'a1', via: 'web_fetch' };
  const audit = async (): Promise<Array<Record<string, unknown>>> =>
    (await events.list('a1')).map((e: SessionEvent) => e.data as Record<string, unknown>);
  return { gateway, caller, audit, events };
};

const allowLoopback = (extra: TenantEgress['allow'] = []) => [
  { host: 'site.test', ports: [port, tcpPort] },
  { host: '127.0.0.1', ports: [port] },
  ...extra,
];

describe('egress gateway', () => {
  it('denies everything by default, and says why', async () => {
    const { gateway, caller, audit } = setup({});
    await expect(gateway.fetch(caller, `http://site.test:${port}/`)).rejects.toMatchObject({
      code: 'EGRESS_DENIED',
      data: { reason: 'no allowlist' },
    });
    expect(await audit()).toEqual([
      expect.objectContaining({
        decision: 'deny',
        host: 'site.test',
        port,
        reason: 'no allowlist',
        via: 'web_fetch',
      }),
    ]);
  });

  it('fetches an allowed host at the address it resolved and checked, and audits it', async () => {
    const { gateway, caller, audit } = setup({ allow: allowLoopback() });
    const res = await gateway.fetch(caller, `http://site.test:${port}/page`);
    expect(await res.text()).toBe('hello GET /page');
    expect(seen.at(-1)?.host).toBe(`site.test:${port}`);
    expect(await audit()).toEqual([
      expect.objectContaining({
        decision: 'allow',
        host: 'site.test',
        ip: '127.0.0.1',
        method: 'GET',
        status: 200,
        url: `http://site.test:${port}/page`,
      }),
    ]);
    // The body's 15 bytes and the response's head: what crossed, as a tunnel counts it.
    expect((await audit())[0]?.bytesIn).toBeGreaterThan(15 + 50);
  });

  it.each([
    ['a name that resolves to a private address', 'http://internal.test/', 'address private'],
    ['the metadata service by name', 'http://metadata.test/', 'address cloud metadata'],
    ['the metadata service by address', 'http://169.254.169.254/latest/meta-data/', 'address cloud metadata'],
    ['loopback as 127.1', 'http://127.1/', 'address loopback'],
    ['loopback as 0x7f000001', 'http://0x7f000001/', 'address loopback'],
    ['IPv4-mapped loopback', 'http://[::ffff:127.0.0.1]/', 'address loopback (127.0.0.1 inside IPv6)'],
    ['localhost.', 'http://localhost./', 'address loopback'],
  ])('refuses %s (without the test switch)', async (_what, url, reason) => {
    const events = createMemoryEventLog();
    const strict = createEgressGateway({
      settingsOf: async () => ({ allow: [{ host: '*' }], credentials: [] }),
      agentRulesOf: async () => undefined,
      events,
      maxBudget: { connections: 8, bytesPerHour: 1_000_000 },
      lookup: async (host) => (host === 'localhost' ? [{ address: '127.0.0.1', family: 4 }] : lookup(host)),
    });
    const caller: EgressCaller = { tenantId: 't1', agentId: 'a1', sessionId: 'a1', via: 'web_fetch' };
    await expect(strict.fetch(caller, url)).rejects.toMatchObject({
      code: 'EGRESS_DENIED',
      data: { reason },
    });
    expect((await events.list('a1'))[0]?.data).toMatchObject({ decision: 'deny', reason });
  });

  it('refuses a name when any one of its addresses is internal', async () => {
    const { gateway, caller } = setup({ allow: [{ host: 'mixed.test' }] });
    await expect(gateway.fetch(caller, 'http://mixed.test/')).rejects.toMatchObject({
      code: 'EGRESS_DENIED',
      data: { reason: 'address private' },
    });
  });

  it('refuses userinfo tricks: http://allowed@evil/ goes nowhere', async () => {
    const { gateway, caller } = setup({ allow: allowLoopback() });
    await expect(gateway.fetch(caller, `http://site.test:${port}@other.test:${port}/`)).rejects.toMatchObject(
      {
        code: 'EGRESS_DENIED',
        data: { reason: 'userinfo in url' },
      },
    );
  });

  it('re-checks every redirect: one to a refused host is refused, one to an allowed host followed', async () => {
    const { gateway, caller, audit } = setup({ allow: allowLoopback() });
    const to = encodeURIComponent(`http://other.test:${port}/secret`);
    await expect(gateway.fetch(caller, `http://site.test:${port}/redirect?to=${to}`)).rejects.toMatchObject({
      code: 'EGRESS_DENIED',
    });
    const meta = encodeURIComponent('http://169.254.169.254/');
    const { gateway: open, caller: c2 } = setup({ allow: [...allowLoopback(), { host: '*' }] });
    await expect(open.fetch(c2, `http://site.test:${port}/redirect?to=${meta}`)).rejects.toMatchObject({
      code: 'EGRESS_DENIED',
      data: { reason: 'address cloud metadata' },
    });
    const ok = encodeURIComponent(`http://127.0.0.1:${port}/landed`);
    const res = await gateway.fetch(caller, `http://site.test:${port}/redirect?to=${ok}`);
    expect(await res.text()).toBe('hello GET /landed');
    expect((await audit()).map((e) => [e.decision, e.host])).toEqual(
      expect.arrayContaining([
        ['deny', 'other.test'],
        ['allow', '127.0.0.1'],
      ]),
    );
    const loop = encodeURIComponent(`http://site.test:${port}/redirect?to=/redirect`);
    await expect(
      gateway.fetch(caller, `http://site.test:${port}/redirect?to=${loop}`, { maxRedirects: 2 }),
    ).rejects.toMatchObject({ code: 'EGRESS_FAILED', data: { reason: 'redirects' } });
  });

  it('adds the credential for its host only, audits its name, never its value', async () => {
    const secret = 'Bearer sk-live-0123456789';
    const { gateway, caller, audit } = setup({
      allow: allowLoopback(),
      // Plain HTTP here for the loopback server: the credential opts in (TLS only otherwise).
      credentials: [
        { name: 'docs', host: 'site.test', header: 'Authorization', value: secret, allowInsecure: true },
      ],
    });
    await (await gateway.fetch(caller, `http://site.test:${port}/a`)).text();
    expect(seen.at(-1)?.headers.authorization).toBe(secret);
    await (
      await gateway.fetch(caller, `http://127.0.0.1:${port}/b`, { headers: { authorization: 'mine' } })
    ).text();
    expect(seen.at(-1)?.headers.authorization).toBe('mine');
    // Across a redirect to another origin the caller's headers stay behind.
    const to = encodeURIComponent(`http://127.0.0.1:${port}/c`);
    await (
      await gateway.fetch(caller, `http://site.test:${port}/redirect?to=${to}`, {
        headers: { 'x-token': 't' },
      })
    ).text();
    expect(seen.at(-1)?.url).toBe('/c');
    expect(seen.at(-1)?.headers['x-token']).toBeUndefined();
    expect(seen.at(-1)?.headers.authorization).toBeUndefined();
    expect(JSON.stringify(await audit())).not.toContain('sk-live');
    expect((await audit())[0]).toMatchObject({ credentials: ['docs'] });
    expect((await gateway.redactor('t1'))(`echo: ${secret}`)).toBe('echo: [credential docs]');
  });

  it('caps the body, and holds the budget: connections at once and bytes per hour', async () => {
    const { gateway, caller } = setup({
      allow: allowLoopback(),
      budget: { connections: 1, bytesPerHour: 250_000 },
    });
    const big = await gateway.fetch(caller, `http://site.test:${port}/big`, { maxBytes: 1000 });
    await expect(big.text()).rejects.toThrow();
    const held = await gateway.fetch(caller, `http://site.test:${port}/big`);
    await expect(gateway.fetch(caller, `http://site.test:${port}/`)).rejects.toMatchObject({
      code: 'EGRESS_BUDGET_EXCEEDED',
      data: { reason: 'connections' },
    });
    await held.text();
    await (await gateway.fetch(caller, `http://site.test:${port}/`)).text();
    expect(gateway.budgets.usage('t1').bytes).toBeGreaterThan(100_000);
    await (await gateway.fetch(caller, `http://site.test:${port}/`)).text();
    await expect((await gateway.fetch(caller, `http://site.test:${port}/big`)).text()).rejects.toThrow();
    await expect(gateway.fetch(caller, `http://site.test:${port}/`)).rejects.toMatchObject({
      code: 'EGRESS_BUDGET_EXCEEDED',
      data: { reason: 'bytes' },
    });
  });

  it("narrows by the agent's rules", async () => {
    const { gateway, caller } = setup({ allow: allowLoopback() }, [{ host: '127.0.0.1', ports: [port] }]);
    await expect(gateway.fetch(caller, `http://site.test:${port}/`)).rejects.toMatchObject({
      code: 'EGRESS_DENIED',
    });
    expect(await (await gateway.fetch(caller, `http://127.0.0.1:${port}/x`)).text()).toBe('hello GET /x');
  });

  it('connect(): an opaque tunnel to an allowed host and port, audited with its bytes when it closes', async () => {
    const { gateway, caller, audit } = setup({ allow: allowLoopback() });
    const tunnel = await gateway.connect({ ...caller, via: 'proxy' }, { host: 'site.test', port: tcpPort });
    expect(tunnel.ip).toBe('127.0.0.1');
    const [client, end] = duplexPair();
    tunnel.join(end);
    const echoed = new Promise<string>((r) => client.once('data', (d: Buffer) => r(String(d))));
    client.write('ping');
    expect(await echoed).toBe('ping');
    client.end();
    await tunnel.closed;
    expect((await audit()).at(-1)).toMatchObject({
      via: 'proxy',
      decision: 'allow',
      bytesIn: 4,
      bytesOut: 4,
      ip: '127.0.0.1',
    });
    await expect(gateway.connect(caller, { host: 'internal.test', port: 443 })).rejects.toMatchObject({
      code: 'EGRESS_DENIED',
    });
  });

  it('allows nothing its log could not record: a full log denies, a tunnel open when it filled is still audited', async () => {
    const { gateway, caller, audit, events } = setup({ allow: allowLoopback() }, undefined, 2_000);
    const tunnel = await gateway.connect({ ...caller, via: 'proxy' }, { host: 'site.test', port: tcpPort });
    // The agent's log fills up while the tunnel is open.
    expect(await events.admits?.('a1')).toBe(true);
    for (let i = 0; (await events.admits?.('a1')) === true; i++)
      await events.append([
        { sessionId: 'a1', type: 'note', surface: 'log-only', data: { i, pad: 'x'.repeat(200) } },
      ]);
    await expect(
      gateway.connect({ ...caller, via: 'proxy' }, { host: 'site.test', port: tcpPort }),
    ).rejects.toMatchObject({ code: 'EGRESS_DENIED', data: { reason: 'event log full' } });
    await expect(gateway.fetch(caller, `http://site.test:${port}/x`)).rejects.toMatchObject({
      code: 'EGRESS_DENIED',
    });
    // The tunnel admitted before settles its audit past the budget.
    tunnel.destroy();
    await tunnel.closed;
    expect((await audit()).filter((e) => e.decision === 'allow')).toEqual([
      expect.objectContaining({ via: 'proxy', host: 'site.test', port: tcpPort }),
    ]);
  });
});
