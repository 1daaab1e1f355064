// Failed key attempts are throttled per client address (issue 28: 120 wrong keys got 120 instant
// 401s), over real HTTP from distinct loopback addresses (127.0.0.x): after the threshold an
// address gets 429 AUTH_THROTTLED with Retry-After and its keys are not checked (a right one waits
// too), while a right key from another address works; every key check counts (tenant keys, the
// admin and metrics keys, terminal sockets, the console's sign-in); X-Forwarded-For is believed
// only from a trusted proxy; the window ends on an injected clock, not a sleep; and the table of
// addresses is bounded however many there are.

import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthThrottle } from '../../../host/api/auth-throttle.ts';
import { sourceKey } from '../../../host/api/client-address.ts';
import { trustedProxies } from '../../../host/trusted-proxies.ts';
import { ADMIN_KEY, type Api, makeApi } from '../api/harness.ts';

const MAX = 5;
const WINDOW_MS = 60_000;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

describe('failed keys are throttled per client address, over HTTP', () => {
  let api: Api;
  let server: ServerType;
  let port: number;
  let clock = 1_000_000;
  const throttle = createAuthThrottle({ maxFailures: MAX, windowMs: WINDOW_MS, now: () => clock });

  beforeAll(async () => {
    api = await makeApi(
      {},
      { app: { authThrottle: throttle, trustedProxies: trustedProxies(['127.0.0.9']) } },
    );
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: api.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
    });
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await api.close();
  });

  /** One request on a fresh connection from the loopback address `from`. */
  const send = (
    from: string,
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: string,
  ): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, method, path, headers, localAddress: from, agent: false },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
  const codeOf = (a: Answer): string | undefined =>
    (JSON.parse(a.text) as { error?: { code: string } }).error?.code;

  it('120 wrong keys: 401 up to the threshold, then 429 unchecked; other addresses are not affected', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 120; i++) {
      const answer = await send('127.0.0.1', 'GET', '/v1/agents', bearer(`dsk_wrong${i}`));
      statuses.push(answer.status);
      if (answer.status === 429) {
        expect(codeOf(answer)).toBe('AUTH_THROTTLED');
        expect(Number(answer.headers['retry-after'])).toBeGreaterThan(0);
        expect(Number(answer.headers['retry-after'])).toBeLessThanOrEqual(WINDOW_MS / 1000);
      }
    }
    expect(statuses.slice(0, MAX)).toEqual(Array(MAX).fill(401));
    expect(statuses.slice(MAX)).toEqual(Array(120 - MAX).fill(429));
    // The right key from the throttled address is not even checked.
    expect((await send('127.0.0.1', 'GET', '/v1/agents', bearer(api.keyA))).status).toBe(429);
    // Another address signs in as ever, and its own wrong key is a plain 401.
    expect((await send('127.0.0.2', 'GET', '/v1/agents', bearer(api.keyA))).status).toBe(200);
    expect((await send('127.0.0.2', 'GET', '/v1/agents', bearer('dsk_wrong'))).status).toBe(401);
    expect(throttle.stats()).toMatchObject({ failures: MAX + 1, refused: 120 - MAX + 1 });

    // After the window the address may try again: a right key works, a wrong one is 401 again.
    clock += WINDOW_MS;
    expect((await send('127.0.0.1', 'GET', '/v1/agents', bearer(api.keyA))).status).toBe(200);
    expect((await send('127.0.0.1', 'GET', '/v1/agents', bearer('dsk_wrong'))).status).toBe(401);
  });

  it('every key check counts: admin routes, /metrics, terminal sockets, a query token', async () => {
    const from = '127.0.0.3';
    const attempts = [
      () => send(from, 'GET', '/v1/tenants', bearer('not-the-admin-key-0123456789')),
      () => send(from, 'GET', '/metrics', bearer('not-the-admin-key-0123456789')),
      () => send(from, 'GET', '/v1/admin/workspaces', bearer('not-the-admin-key-0123456789')),
      () => send(from, 'GET', '/v1/agents/x/terminals/t1', bearer('dsk_wrong')),
      () => send(from, 'GET', '/v1/agents/x/terminals/t1?token=dsk_wrong'),
    ];
    for (const attempt of attempts) expect((await attempt()).status).toBe(401);
    // The threshold is reached: the admin key itself now waits, on every route.
    const refused = await send(from, 'GET', '/v1/tenants', bearer(ADMIN_KEY));
    expect(refused.status).toBe(429);
    expect(codeOf(refused)).toBe('AUTH_THROTTLED');
    expect((await send(from, 'GET', '/metrics', bearer(ADMIN_KEY))).status).toBe(429);
    // A request without a key is no guess: it stays a 401 and counts nothing elsewhere.
    expect((await send('127.0.0.4', 'GET', '/v1/agents')).status).toBe(401);
    expect((await send('127.0.0.4', 'GET', '/v1/tenants', bearer(ADMIN_KEY))).status).toBe(200);
    clock += WINDOW_MS;
  });

  it("the console's sign-in counts its wrong keys against the browser's address", async () => {
    const signin = (key: string) =>
      send(
        '127.0.0.5',
        'POST',
        '/console/signin',
        { 'Content-Type': 'application/x-www-form-urlencoded' },
        new URLSearchParams({ key, role: 'tenant' }).toString(),
      );
    for (let i = 0; i < MAX; i++) expect((await signin(`dsk_wrong${i}`)).status).toBe(401);
    const refused = await signin(api.keyA);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.text).toContain('Too many failed sign-ins');
    // The API from another address, and the sign-in after the window, are unaffected.
    expect((await send('127.0.0.6', 'GET', '/v1/agents', bearer(api.keyA))).status).toBe(200);
    clock += WINDOW_MS;
    expect((await signin(api.keyA)).status).toBe(303);
  });

  it('X-Forwarded-For is believed only from a trusted proxy', async () => {
    // An untrusted client that names a new address with every guess is still one address.
    const forged = [];
    for (let i = 0; i <= MAX; i++)
      forged.push(
        (
          await send('127.0.0.7', 'GET', '/v1/agents', {
            ...bearer('dsk_wrong'),
            'X-Forwarded-For': `198.51.100.${i}`,
          })
        ).status,
      );
    expect(forged).toEqual([...Array(MAX).fill(401), 429]);
    // Through the trusted proxy (127.0.0.9) each client it names counts on its own, and a spoofed
    // hop the client put in front of the proxy's own does not matter.
    const viaProxy = (client: string, key: string) =>
      send('127.0.0.9', 'GET', '/v1/agents', { ...bearer(key), 'X-Forwarded-For': `10.9.9.9, ${client}` });
    for (let i = 0; i < MAX; i++) expect((await viaProxy('203.0.113.1', 'dsk_wrong')).status).toBe(401);
    expect((await viaProxy('203.0.113.1', api.keyA)).status).toBe(429);
    expect((await viaProxy('203.0.113.2', api.keyA)).status).toBe(200);
    expect((await send('127.0.0.9', 'GET', '/v1/agents', bearer(api.keyA))).status).toBe(200);
    clock += WINDOW_MS;
  });
});

describe('the throttle table', () => {
  it('holds at most maxSources addresses, forgetting the least recently failed', () => {
    const throttle = createAuthThrottle({ maxFailures: 2, maxSources: 100 });
    for (let i = 0; i < 10_000; i++) throttle.failed(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    expect(throttle.stats().sources).toBe(100);
    throttle.failed('192.0.2.1');
    throttle.failed('192.0.2.1');
    expect(() => throttle.admit('192.0.2.1')).toThrow(expect.objectContaining({ code: 'AUTH_THROTTLED' }));
    expect(throttle.stats().sources).toBe(100);
  });

  it('counts an IPv6 client by its /64, an IPv4-mapped one as IPv4', () => {
    expect(sourceKey('2001:db8:1:2::1')).toBe(sourceKey('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(sourceKey('2001:db8:1:2::1')).not.toBe(sourceKey('2001:db8:1:3::1'));
    expect(sourceKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(sourceKey('not an address')).toBeUndefined();
  });
});
