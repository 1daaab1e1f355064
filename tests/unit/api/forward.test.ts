// Forwarding an HTTP request to the replica that owns the agent (host/api/forward/request.ts), over
// two real loopback servers: what passes (method, path, query, end-to-end headers, body) and what
// does not (hop-by-hop headers, a client's own forwarding headers), the body streamed both ways
// (an upload read while the client still sends, SSE events one by one), a client that goes away
// cancelling the owner's work, and an owner that is down answering 503 OWNER_UNREACHABLE.
import { createHash } from 'node:crypto';
import { type IncomingMessage, request } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Route } from '../../../host/api/forward/route.ts';
import { trustedProxies } from '../../../host/trusted-proxies.ts';
import { until } from '../../helpers/until.ts';
import {
  frontApp,
  type Listening,
  listen,
  newOwnerState,
  type OwnerState,
  ownerApp,
} from './forward-servers.ts';

let state: OwnerState;
let owner: Listening;
let front: Listening;
let closeFront: () => void;
let route: Route;

const startFront = async (options: Parameters<typeof frontApp>[1] = {}) => {
  const made = frontApp(() => route, options);
  closeFront = made.close;
  front = await listen(made.app, { tunnels: true });
};

beforeEach(async () => {
  state = newOwnerState();
  owner = await listen(ownerApp(state));
  route = { kind: 'forward', url: owner.url, replicaId: 'owner' };
  await startFront();
});

afterEach(async () => {
  closeFront();
  await front.close();
  await owner.close();
});

/** A request through node:http (which lets a test send any header), its answer read whole. */
const send = (
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; headers: IncomingMessage['headers']; text: string }> =>
  new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString(),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });

describe('forwarding a request', () => {
  it('passes method, path, query, end-to-end headers and body, and drops hop-by-hop headers', async () => {
    const answer = await send(`${front.url}/v1/agents/a1/echo?b=two%20words&a=1&a=2`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer the-tenant-key',
        'content-type': 'application/json',
        'x-custom': 'kept',
        connection: 'keep-alive, x-hop',
        'keep-alive': 'timeout=5',
        'x-hop': 'named by Connection',
        'proxy-authorization': 'Basic c2VjcmV0',
        te: 'trailers',
        trailer: 'x-checksum',
      },
      body: '{"hello":"owner"}',
    });
    expect(answer.status).toBe(200);
    expect(answer.headers['x-owner']).toBe('yes');
    const seen = JSON.parse(answer.text);
    // The front's request id (made here: the client gave none) is the owner's too.
    expect(seen.headers['x-request-id']).toMatch(/^[\w-]{20,}$/);
    expect(seen).toMatchObject({
      method: 'POST',
      path: '/v1/agents/a1/echo',
      search: '?b=two%20words&a=1&a=2',
      body: '{"hello":"owner"}',
      forwardedBy: 'front',
      client: '127.0.0.1',
    });
    expect(seen.headers).toMatchObject({
      authorization: 'Bearer the-tenant-key',
      'content-type': 'application/json',
      'x-custom': 'kept',
      host: new URL(owner.url).host,
      'x-dsh-forwarded-by': 'front',
    });
    for (const hop of ['keep-alive', 'x-hop', 'proxy-authorization', 'te', 'trailer'])
      expect(seen.headers[hop], hop).toBeUndefined();
  });

  it('answers HEAD without a body', async () => {
    const head = await send(`${front.url}/v1/agents/a1/echo`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
  });

  it("replaces a client's own forwarding headers with its signature (front without a check of its own)", async () => {
    closeFront();
    await front.close();
    await startFront({ verify: false });
    const answer = await send(`${front.url}/v1/agents/a1/echo`, {
      headers: {
        'x-dsh-forwarded-by': 'someone-else',
        'x-dsh-client-address': '6.6.6.6',
        'x-dsh-forward-ts': String(Date.now()),
        'x-dsh-forward-sig': 'forged',
      },
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toMatchObject({ forwardedBy: 'front', client: '127.0.0.1' });
  });

  it('refuses a client that sets forwarding headers itself (401 FORWARD_UNVERIFIED), forwarding nothing', async () => {
    const answer = await send(`${front.url}/v1/agents/a1/calls`, {
      method: 'POST',
      headers: { 'x-dsh-forwarded-by': 'owner', 'x-dsh-client-address': '6.6.6.6' },
      body: '{}',
    });
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.text).error.code).toBe('FORWARD_UNVERIFIED');
    expect(state.longStarted).toBe(false);
  });

  it('names the client the front counts (behind its trusted proxy), not the front, to the owner', async () => {
    closeFront();
    await front.close();
    await startFront({ forwarder: { trustedProxies: trustedProxies(['127.0.0.1']) } });
    const answer = await send(`${front.url}/v1/agents/a1/echo`, {
      headers: { 'x-forwarded-for': '203.0.113.7' },
    });
    expect(JSON.parse(answer.text)).toMatchObject({ client: '203.0.113.7', forwardedBy: 'front' });
  });

  it('streams an upload: the owner reads it while the client still sends', async () => {
    const chunk = Buffer.alloc(256 * 1024, 7);
    const hash = createHash('sha256');
    const req = request(`${front.url}/v1/agents/a1/upload`, { method: 'PUT' });
    const answered = new Promise<string>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (d: Buffer) => {
          text += d;
        });
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
    });
    for (let sent = 1; sent <= 8; sent++) {
      req.write(chunk);
      hash.update(chunk);
      // The next chunk goes only once the owner has this one: a forwarder that buffered the body
      // until its end would never get there.
      await until(() => state.uploaded >= sent * chunk.length, { what: `the owner to read chunk ${sent}` });
    }
    req.end();
    expect(JSON.parse(await answered)).toEqual({ bytes: 8 * chunk.length });
  });

  it('streams a body a middleware already wrapped in a web stream as well', async () => {
    closeFront();
    await front.close();
    await startFront({ rewrap: true });
    const req = request(`${front.url}/v1/agents/a1/upload`, { method: 'PUT' });
    const answered = new Promise<string>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (d: Buffer) => {
          text += d;
        });
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
    });
    const chunk = Buffer.alloc(100_000, 1);
    for (let sent = 1; sent <= 3; sent++) {
      req.write(chunk);
      await until(() => state.uploaded >= sent * chunk.length, { what: `the owner to read chunk ${sent}` });
    }
    req.end();
    expect(JSON.parse(await answered)).toEqual({ bytes: 3 * chunk.length });
  });

  it('streams SSE event by event, before the stream ends', async () => {
    const encoder = new TextEncoder();
    const received: string[] = [];
    let ended = false;
    let status = 0;
    let type: string | undefined;
    const req = request(`${front.url}/v1/agents/a1/events`, (res) => {
      status = res.statusCode ?? 0;
      type = res.headers['content-type'];
      res.setEncoding('utf8');
      res.on('data', (text: string) => received.push(text));
      res.on('end', () => {
        ended = true;
      });
    });
    req.end();
    await until(() => state.sse, { what: 'the owner to open the stream' });
    for (let n = 1; n <= 3; n++) {
      state.sse?.enqueue(encoder.encode(`id: ${n}\nevent: tool.result\ndata: {"n":${n}}\n\n`));
      await until(() => received.join('').includes(`data: {"n":${n}}`), { what: `event ${n} at the client` });
      expect(ended).toBe(false);
    }
    state.sse?.close();
    await until(() => ended, { what: 'the end of the stream' });
    expect(status).toBe(200);
    expect(type).toBe('text/event-stream');
    expect(received.join('')).toBe(
      [1, 2, 3].map((n) => `id: ${n}\nevent: tool.result\ndata: {"n":${n}}\n\n`).join(''),
    );
  });

  it('cancels the owner’s work when the client goes away', async () => {
    const req = request(`${front.url}/v1/agents/a1/calls`, { method: 'POST' });
    req.on('error', () => {});
    req.end('{"calls":[]}');
    await until(() => state.longStarted, { what: 'the owner to start the batch' });
    req.destroy();
    await until(() => state.longAborted, { what: 'the owner to see its request cancelled' });
  });

  it('ends the owner’s stream when the client leaves in the middle of it', async () => {
    let received = '';
    const req = request(`${front.url}/v1/agents/a1/events`, (res) => {
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        received += text;
      });
      res.on('error', () => {});
    });
    req.on('error', () => {});
    req.end();
    await until(() => state.sse, { what: 'the owner to open the stream' });
    state.sse?.enqueue(new TextEncoder().encode('data: first\n\n'));
    await until(() => received.includes('data: first'), { what: 'the first event at the client' });
    req.destroy();
    await until(() => state.sseCancelled, { what: 'the owner to see its stream cancelled' });
  });

  it('answers 503 OWNER_UNREACHABLE with Retry-After: 1 when the owner is down', async () => {
    await owner.close();
    const answer = await send(`${front.url}/v1/agents/a1/echo`, { method: 'POST', body: 'x' });
    expect(answer.status).toBe(503);
    expect(answer.headers['retry-after']).toBe('1');
    expect(JSON.parse(answer.text).error.code).toBe('OWNER_UNREACHABLE');
    owner = await listen(ownerApp(state)); // for afterEach
  });

  it('serves a request here when the route says local', async () => {
    route = { kind: 'local' };
    const answer = await send(`${front.url}/v1/agents/a1/echo`, {});
    expect(JSON.parse(answer.text)).toEqual({ servedBy: 'front' });
  });
});
