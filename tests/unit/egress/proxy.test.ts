// The control plane's proxy server for sandbox egress (host/egress/proxy/server.ts) on in-memory
// connections, with a gateway double: CONNECT tunnels bytes both ways once the gateway admits
// them; refusals are HTTP answers with the gateway's reason; a plain request goes to gateway.fetch
// without hop-by-hop or proxy headers and without following redirects; what a hostile client sends
// (a target that is not host:port, an oversized head, an origin-form request) is refused before
// the gateway is asked.

import type { AddressInfo } from 'node:net';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { type Duplex, duplexPair } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EgressConnection } from '../../../host/egress/gateway.ts';
import { createProxyServer } from '../../../host/egress/proxy/server.ts';
import { splice } from '../../../host/egress/tunnel.ts';
import type { EgressCaller } from '../../../host/egress/types.ts';
import { SandboxError } from '../../../host/errors.ts';

const caller: EgressCaller = { tenantId: 't', agentId: 'a', sessionId: 'a', via: 'proxy' };
let echo: Server;
let echoPort = 0;
beforeAll(async () => {
  echo = createServer((s) => s.pipe(s));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', () => resolve()));
  echoPort = (echo.address() as AddressInfo).port;
});
afterAll(() => {
  echo.close();
});

/** A connection as the gateway's, over `socket` (no budget to speak of). */
function tunnelTo(socket: Socket): EgressConnection {
  const lease = { charge: () => true, take: () => true, close: () => {} };
  return {
    ip: '127.0.0.1',
    closed: new Promise(() => {}),
    join: (client, options) => splice(client, socket, lease, { idleMs: 0, ...options, onCut: () => {} }),
    destroy: () => socket.destroy(),
  };
}

function harness(refuse?: SandboxError) {
  const calls: Array<{ kind: string; host?: string; port?: number; url?: string; init?: unknown }> = [];
  const proxy = createProxyServer({
    gateway: {
      intercepts: async () => false,
      audit: () => {},
      authorize: async () => {
        throw new Error('unused');
      },
      async connect(_caller, to): Promise<EgressConnection> {
        calls.push({ kind: 'connect', host: to.host, port: to.port });
        if (refuse) throw refuse;
        const socket = connect(echoPort, '127.0.0.1');
        await new Promise((resolve) => socket.once('connect', resolve));
        return tunnelTo(socket);
      },
      async fetch(_caller, url, init) {
        calls.push({ kind: 'fetch', url: String(url), init });
        if (refuse) throw refuse;
        return new Response('upstream body', {
          status: 302,
          headers: { location: 'http://elsewhere/', connection: 'x' },
        });
      },
    },
  });
  /** One client connection: what we write, and everything it answers until it closes or `until` matches. */
  const exchange = (request: string | Buffer, until?: RegExp, more?: (client: Duplex) => void) => {
    const [client, server] = duplexPair();
    proxy.handle(server, caller);
    return new Promise<string>((resolve) => {
      let text = '';
      client.on('data', (b: Buffer) => {
        text += b.toString('latin1');
        if (until?.test(text)) {
          client.destroy();
          resolve(text);
        }
      });
      client.on('end', () => resolve(text));
      client.on('close', () => resolve(text));
      client.write(request);
      more?.(client);
    });
  };
  return { calls, exchange };
}

describe('sandbox egress proxy server', () => {
  it('tunnels a CONNECT the gateway admits, bytes both ways', async () => {
    const h = harness();
    const text = await h.exchange(
      'CONNECT 127.0.0.2:443 HTTP/1.1\r\nHost: 127.0.0.2:443\r\n\r\nping',
      /ping$/,
    );
    expect(text).toBe('HTTP/1.1 200 Connection Established\r\n\r\nping');
    expect(h.calls).toEqual([{ kind: 'connect', host: '127.0.0.2', port: 443 }]);
  });

  it('lets go of the upstream when the client left while the gateway connected', async () => {
    let release: () => void = () => {};
    const upstream = connect(echoPort, '127.0.0.1');
    let signal: AbortSignal | undefined;
    const proxy = createProxyServer({
      gateway: {
        intercepts: async () => false,
        audit: () => {},
        authorize: async () => {
          throw new Error('unused');
        },
        connect: async (_caller, _to, s) => {
          signal = s;
          await new Promise<void>((resolve) => {
            release = resolve;
          });
          return tunnelTo(upstream);
        },
        fetch: async () => new Response(''),
      },
    });
    const [client, server] = duplexPair();
    proxy.handle(server, caller);
    client.write('CONNECT a.test:443 HTTP/1.1\r\n\r\n');
    const deadline = Date.now() + 5000;
    while (!signal && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    client.destroy();
    server.destroy();
    while (!signal?.aborted && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(signal?.aborted).toBe(true);
    release();
    while (!upstream.destroyed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(upstream.destroyed).toBe(true);
  });

  it('answers a refused CONNECT with 403, the reason in X-Dsh-Egress and the message as body', async () => {
    const h = harness(
      new SandboxError('EGRESS_DENIED', 'Egress to x.test:443 is denied.', {
        data: { reason: 'not in allowlist' },
      }),
    );
    const text = await h.exchange('CONNECT x.test:443 HTTP/1.1\r\n\r\n');
    expect(text).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
    expect(text).toContain('X-Dsh-Egress: denied; reason="not in allowlist"');
    expect(text).toContain('\r\n\r\nEgress to x.test:443 is denied.\n');
  });

  it('says 429 for a used budget and 502 for an unreachable host', async () => {
    const budget = harness(new SandboxError('EGRESS_BUDGET_EXCEEDED', 'budget'));
    expect(await budget.exchange('CONNECT a.test:443 HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 429/);
    const failed = harness(new SandboxError('EGRESS_FAILED', 'down'));
    expect(await failed.exchange('CONNECT a.test:443 HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 502/);
  });

  it('refuses hostile input before asking the gateway', async () => {
    const h = harness();
    for (const target of [
      'evil',
      'a.test:0',
      'a.test:65536',
      'a.test:http',
      'user@a.test:443',
      '[::1:443',
      'a b:443',
    ])
      expect(await h.exchange(`CONNECT ${target} HTTP/1.1\r\n\r\n`), target).toMatch(/^HTTP\/1\.1 400/);
    const huge = `GET http://a.test/ HTTP/1.1\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`;
    expect(await h.exchange(huge)).toMatch(/^HTTP\/1\.1 400/);
    expect(await h.exchange('GET /local HTTP/1.1\r\nHost: a\r\n\r\n')).toMatch(/^HTTP\/1\.1 400/);
    expect(await h.exchange('\x16\x03\x01garbage\r\n\r\n')).toMatch(/^HTTP\/1\.1 400/);
    expect(h.calls).toEqual([]);
  });

  it('sends a plain request through gateway.fetch without proxy or hop-by-hop headers, redirects left to the client', async () => {
    const h = harness();
    const text = await h.exchange(
      'GET http://a.test/path?q=1 HTTP/1.1\r\nHost: a.test\r\nProxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive\r\nAccept: text/plain\r\nConnection: close\r\n\r\n',
    );
    expect(text).toMatch(/^HTTP\/1\.1 302 Found\r\n/);
    expect(text.toLowerCase()).toContain('location: http://elsewhere/');
    expect(text).toContain('upstream body');
    const call = h.calls[0] as {
      url: string;
      init: { headers: Array<[string, string]>; maxRedirects: number };
    };
    expect(call.url).toBe('http://a.test/path?q=1');
    expect(call.init.maxRedirects).toBe(0);
    expect(call.init.headers.map(([n]) => n.toLowerCase())).toEqual(['accept']);
  });
});
