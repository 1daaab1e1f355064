// Issue 28: "Egress budgets are charged after the bytes left." With 1 MiB per hour, 12 MiB went out
// in one upload, through a CONNECT tunnel and as a plain-HTTP body, since a tunnel's upload and a
// request's body were charged only when they closed. Now bytes are charged as they flow, both
// ways, on every path (the sandbox's proxy: tunnels and plain HTTP; the gateway's fetch, which
// web_fetch and remote MCP servers use), and a connection is cut at the budget: the upstream gets
// at most the budget and the client a clear end (a cut tunnel, a 429, an error naming the budget).
// Loopback servers stand in for the internet; the real gateway and the real proxy server.
import { createServer, type Server } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { type Duplex, duplexPair } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEgressGateway } from '../../../host/egress/gateway.ts';
import { createProxyServer } from '../../../host/egress/proxy/server.ts';
import type { EgressCaller } from '../../../host/egress/types.ts';
import { createMemoryEventLog } from '../../../host/store/index.ts';
import { until } from '../../helpers/until.ts';

const MiB = 1024 * 1024;
const BUDGET = MiB;
const LARGE = 12 * MiB;
/** A socket's read or a stream's chunk: the most a charge that crosses the budget lets through. */
const CHUNK = 64 * 1024;
const chunk = Buffer.alloc(CHUNK, 'u');

/** Bytes each upstream received, by what it is. */
const received = { sink: 0, body: 0, heads: 0 };
let sink: TcpServer; // counts what a tunnel sends
let source: TcpServer; // sends LARGE bytes to whoever connects
let http: Server; // counts request bodies; /large answers LARGE bytes
const ports = { sink: 0, source: 0, http: 0 };

beforeAll(async () => {
  sink = createTcpServer((s) => {
    s.on('data', (b: Buffer) => {
      received.sink += b.length;
    });
    s.on('error', () => {});
  });
  source = createTcpServer((s) => {
    s.on('error', () => {});
    let left = LARGE;
    const pump = (): void => {
      while (left > 0) {
        left -= CHUNK;
        if (!s.write(chunk)) return void s.once('drain', pump);
      }
      s.end();
    };
    pump();
  });
  http = createServer((req, res) => {
    received.heads += req.rawHeaders.reduce((n, h) => n + h.length + 2, (req.url?.length ?? 0) + 16);
    req.on('data', (b: Buffer) => {
      received.body += b.length;
    });
    req.on('end', () => {
      if (req.url?.startsWith('/headers')) {
        res.writeHead(204, { 'x-down': 'd'.repeat(8000) });
        return void res.end();
      }
      if (req.url !== '/large') return void res.end('ok\n');
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': LARGE });
      let left = LARGE;
      const pump = (): void => {
        while (left > 0) {
          left -= CHUNK;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
  });
  const listen = (s: TcpServer | Server): Promise<number> =>
    new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port)));
  ports.sink = await listen(sink);
  ports.source = await listen(source);
  ports.http = await listen(http);
});
afterAll(() => {
  sink.close();
  source.close();
  http.closeAllConnections();
  http.close();
});

const caller: EgressCaller = { tenantId: 't1', agentId: 'a1', sessionId: 'a1', via: 'proxy' };

/** A fresh gateway (budgets of its own) admitting the loopback servers, with 1 MiB per hour. */
function setup(bytesPerHour = BUDGET) {
  const events = createMemoryEventLog();
  const gateway = createEgressGateway({
    settingsOf: async () => ({
      allow: [{ host: '127.0.0.1', ports: [ports.sink, ports.source, ports.http] }],
      credentials: [],
      budget: { bytesPerHour },
    }),
    agentRulesOf: async () => undefined,
    events,
    maxBudget: { connections: 8, bytesPerHour: 1024 * MiB },
    testHosts: [{ ip: '127.0.0.1' }],
  });
  const proxy = createProxyServer({ gateway });
  const audit = async () => (await events.list('a1')).map((e) => e.data as Record<string, unknown>);
  return { gateway, proxy, audit };
}

/**
 * A client connection to the proxy: what it has received, and whether the proxy closed its end
 * (what sandboxd turns into a cut of the client's connection: ../../../host/egress/proxy/duplex.ts).
 */
function connectClient(proxy: ReturnType<typeof createProxyServer>) {
  const [client, server] = duplexPair();
  proxy.handle(server, caller);
  const state = { text: '', bytes: 0, closed: false };
  client.on('data', (b: Buffer) => {
    state.bytes += b.length;
    if (state.text.length < 4096) state.text += b.toString('latin1');
  });
  client.on('error', () => {});
  server.on('close', () => {
    state.closed = true;
    client.destroy();
  });
  return { client, state };
}

/** Writes `total` bytes in chunks, minding backpressure, until done or the connection is gone; how many were written. */
async function upload(client: Duplex, total: number): Promise<number> {
  let sent = 0;
  while (sent < total && !client.destroyed) {
    sent += CHUNK;
    if (!client.write(chunk))
      await new Promise<void>((resolve) => {
        const done = (): void => {
          client.off('drain', done);
          client.off('close', done);
          resolve();
        };
        client.on('drain', done);
        client.on('close', done);
      });
  }
  return sent;
}

describe('egress budgets are charged as the bytes flow, and the connection is cut at the budget', () => {
  it('an upload through a CONNECT tunnel: the upstream gets at most the budget, the tunnel is cut', async () => {
    received.sink = 0;
    const { proxy, gateway, audit } = setup();
    const { client, state } = connectClient(proxy);
    client.write(`CONNECT 127.0.0.1:${ports.sink} HTTP/1.1\r\n\r\n`);
    await until(() => state.text.includes('\r\n\r\n'), { what: 'the CONNECT answer' });
    expect(state.text).toMatch(/^HTTP\/1\.1 200/);
    await upload(client, LARGE);
    await until(() => state.closed, { what: 'the tunnel cut' });
    await until(async () => (await audit()).some((e) => e.decision === 'allow'), { what: 'the audit' });
    expect(received.sink).toBeLessThanOrEqual(BUDGET);
    expect(gateway.budgets.usage('t1').bytes).toBeLessThanOrEqual(BUDGET);
    expect((await audit()).find((e) => e.decision === 'allow')).toMatchObject({
      error: 'egress budget used up',
      bytesOut: received.sink,
    });
  });

  it('a plain-HTTP upload: the body that does not fit is not sent, and the client gets a 429 saying why', async () => {
    received.body = 0;
    const { proxy, gateway } = setup();
    const { client, state } = connectClient(proxy);
    client.write(
      `POST http://127.0.0.1:${ports.http}/upload HTTP/1.1\r\nHost: 127.0.0.1:${ports.http}\r\nContent-Length: ${LARGE}\r\n\r\n`,
    );
    await upload(client, LARGE);
    await until(() => state.text.includes('\r\n\r\n'), { what: 'the answer' });
    expect(state.text).toMatch(/^HTTP\/1\.1 429/);
    expect(state.text).toMatch(/x-dsh-egress: budget; reason="bytes"/i);
    expect(state.text).toContain('egress budget');
    expect(received.body).toBe(0);
    expect(gateway.budgets.usage('t1').bytes).toBe(0);
    // What fits still goes: the budget was not spent on bytes never sent.
    const small = connectClient(proxy);
    small.client.write(
      `POST http://127.0.0.1:${ports.http}/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello`,
    );
    await until(() => small.state.text.includes('ok\n'), { what: 'the small upload' });
    expect(received.body).toBe(5);
    small.client.destroy();
    client.destroy();
  });

  it('request and response heads count as bodies do: 8 KB headers both ways stop at the budget', async () => {
    received.heads = 0;
    const budget = 64 * 1024;
    const { proxy, gateway } = setup(budget);
    const statuses: string[] = [];
    for (let i = 0; i < 40; i++) {
      const { client, state } = connectClient(proxy);
      client.write(
        `GET http://127.0.0.1:${ports.http}/headers?d=${'q'.repeat(2000)} HTTP/1.1\r\nHost: x\r\nX-Exfil: ${'a'.repeat(8000)}\r\n\r\n`,
      );
      await until(() => state.text.includes('\r\n\r\n') || state.closed, { what: `answer ${i}` });
      statuses.push(state.text.slice(9, 12));
      client.destroy();
    }
    // Each exchange moves about 18 KB of heads: a 64 KiB budget lets a few through, then 429s.
    expect(statuses.filter((s) => s === '429').length).toBeGreaterThan(30);
    expect(received.heads).toBeLessThanOrEqual(budget);
    expect(gateway.budgets.usage('t1').bytes).toBeLessThanOrEqual(budget + 9000);
  });

  it('a download through a CONNECT tunnel: the client gets at most the budget and a chunk, then the tunnel is cut', async () => {
    const { proxy, gateway } = setup();
    const { client, state } = connectClient(proxy);
    client.write(`CONNECT 127.0.0.1:${ports.source} HTTP/1.1\r\n\r\n`);
    await until(() => state.closed, { what: 'the tunnel cut' });
    expect(state.bytes).toBeLessThanOrEqual(BUDGET + CHUNK + 100);
    expect(gateway.budgets.usage('t1').bytes).toBeLessThanOrEqual(BUDGET + CHUNK);
  });

  it('a plain-HTTP download: the client gets at most the budget and a chunk, then the connection is cut', async () => {
    const { proxy } = setup();
    const { client, state } = connectClient(proxy);
    client.write(`GET http://127.0.0.1:${ports.http}/large HTTP/1.1\r\nHost: x\r\n\r\n`);
    await until(() => state.closed, { what: 'the connection cut' });
    expect(state.text).toMatch(/^HTTP\/1\.1 200/);
    expect(state.bytes).toBeLessThan(BUDGET + CHUNK + 1024);
  });

  it("the gateway's fetch (web_fetch, remote MCP servers): a body over the budget is refused unsent, a download past it errors", async () => {
    received.body = 0;
    const { gateway } = setup();
    const web: EgressCaller = { ...caller, via: 'web_fetch' };
    await expect(
      gateway.fetch(web, `http://127.0.0.1:${ports.http}/upload`, {
        method: 'POST',
        body: Buffer.alloc(LARGE),
      }),
    ).rejects.toMatchObject({ code: 'EGRESS_BUDGET_EXCEEDED' });
    expect(received.body).toBe(0);
    const response = await gateway.fetch(web, `http://127.0.0.1:${ports.http}/large`);
    await expect(response.arrayBuffer()).rejects.toMatchObject({ code: 'EGRESS_BUDGET_EXCEEDED' });
    expect(gateway.budgets.usage('t1').bytes).toBeLessThanOrEqual(BUDGET + CHUNK);
  });
});
