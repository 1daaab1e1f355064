// Authentication between replicas (host/api/forward/sign.ts, verify.ts) and the router's slot in
// the app (route.ts): a signature vouches for one request line from one client within the clock
// window and for nothing else; forged, stale or mangled ones are refused 401 FORWARD_UNVERIFIED; a
// forwarded request is never forwarded again (503 OWNER_MOVED); the app asks its route function
// after the tenant's key and before anything else, and forwards what it says.
import { randomBytes } from 'node:crypto';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApiEnv } from '../../../host/api/env.ts';
import { errorHandler } from '../../../host/api/errors.ts';
import {
  createForwarder,
  type Forwarder,
  forwardByRoute,
  type Route,
  type RouteRequest,
  routeSlot,
} from '../../../host/api/forward/route.ts';
import {
  CLOCK_SKEW_MS,
  type ForwardClaim,
  forwardHeaders,
  replicaKey,
  verifyForward,
} from '../../../host/api/forward/sign.ts';
import { verifyForwarded } from '../../../host/api/forward/verify.ts';
import { KEY, type Listening, listen, newOwnerState, ownerApp } from './forward-servers.ts';
import { type Api, makeApi } from './harness.ts';

const NOW = 1_765_000_000_000;
const claim: ForwardClaim = {
  replicaId: 'replica-a',
  timestamp: NOW,
  method: 'POST',
  target: '/v1/agents/a1/calls?x=1',
  client: '203.0.113.7',
};
const headerOf = (headers: Record<string, string>) => (name: string) => headers[name];
const verify = (
  headers: Record<string, string>,
  method = 'POST',
  url = 'http://h/v1/agents/a1/calls?x=1',
  now = NOW,
) => verifyForward(KEY, headerOf(headers), method, url, now);

describe('the replica signature', () => {
  it('vouches for the replica, the request line and the client', () => {
    expect(verify(forwardHeaders(KEY, claim))).toEqual({
      kind: 'forwarded',
      replicaId: 'replica-a',
      client: '203.0.113.7',
    });
    expect(verify({})).toEqual({ kind: 'direct' });
  });

  it('is refused for another method, path, query, client, replica or key', () => {
    const signed = forwardHeaders(KEY, claim);
    expect(verify(signed, 'GET').kind).toBe('refused');
    expect(verify(signed, 'POST', 'http://h/v1/agents/a2/calls?x=1').kind).toBe('refused');
    expect(verify(signed, 'POST', 'http://h/v1/agents/a1/calls?x=2').kind).toBe('refused');
    expect(verify({ ...signed, 'x-dsh-client-address': '198.51.100.1' }).kind).toBe('refused');
    expect(verify({ ...signed, 'x-dsh-forwarded-by': 'replica-b' }).kind).toBe('refused');
    expect(verify(forwardHeaders(replicaKey(randomBytes(32)), claim)).kind).toBe('refused');
  });

  it('is refused when missing, partial or outside the clock window', () => {
    const signed = forwardHeaders(KEY, claim);
    expect(verify({ 'x-dsh-forwarded-by': 'replica-a' })).toMatchObject({ kind: 'refused' });
    expect(verify({ 'x-dsh-client-address': '6.6.6.6' })).toMatchObject({ kind: 'refused' });
    const { 'x-dsh-forward-sig': _, ...unsigned } = signed;
    expect(verify(unsigned).kind).toBe('refused');
    expect(verify(signed, 'POST', undefined, NOW + CLOCK_SKEW_MS).kind).toBe('forwarded');
    expect(verify(signed, 'POST', undefined, NOW + CLOCK_SKEW_MS + 1)).toMatchObject({
      kind: 'refused',
      reason: 'timestamp outside the clock window',
    });
    expect(verify(signed, 'POST', undefined, NOW - CLOCK_SKEW_MS - 1).kind).toBe('refused');
  });

  it('derives the replica key from the secrets key alone (every replica on one store agrees)', () => {
    const secrets = randomBytes(32);
    expect(replicaKey(secrets).equals(replicaKey(Buffer.from(secrets)))).toBe(true);
    expect(replicaKey(secrets).equals(secrets)).toBe(false);
  });
});

/** An app that checks signatures and routes with `route`; the forwarder must not be reached. */
const routedApp = (route: (c: unknown, r: RouteRequest) => Route) => {
  const app = new Hono<ApiEnv>();
  app.onError(errorHandler());
  app.use(verifyForwarded({ key: KEY, now: () => NOW }));
  const forwarder: Forwarder = {
    request: () => Promise.reject(new Error('forwarded')),
    upgrade: () => false,
    close: () => {},
  };
  app.use('/v1/agents/:id/*', forwardByRoute({ route, forwarder }));
  app.all('*', (c) => c.json({ here: true, forwardedBy: c.get('forwardedBy') ?? null }));
  return app;
};

const signedInit = (method: string, target: string, replicaId = 'replica-a'): RequestInit => ({
  method,
  headers: forwardHeaders(KEY, { replicaId, timestamp: NOW, method, target, client: '203.0.113.7' }),
});

describe('the receiving replica', () => {
  it('refuses forged, stale or partial forwarding headers with 401 FORWARD_UNVERIFIED', async () => {
    const app = routedApp(() => ({ kind: 'local' }));
    for (const headers of [
      { 'x-dsh-forwarded-by': 'replica-a' },
      {
        ...(signedInit('GET', '/v1/agents/a1/x').headers as Record<string, string>),
        'x-dsh-forward-sig': 'AAAA',
      },
      forwardHeaders(KEY, { ...claim, method: 'GET', target: '/v1/agents/a1/x', timestamp: NOW - 31_000 }),
    ]) {
      const res = await app.request('/v1/agents/a1/x', { headers });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('FORWARD_UNVERIFIED');
    }
  });

  it('marks a valid forwarded request and never forwards it again: 503 OWNER_MOVED, Retry-After: 1', async () => {
    const asked: RouteRequest[] = [];
    const app = routedApp((_c, r) => {
      asked.push(r);
      return { kind: 'forward', url: 'http://127.0.0.1:9', replicaId: 'replica-c' };
    });
    const res = await app.request('/v1/agents/a1/calls', signedInit('POST', '/v1/agents/a1/calls'));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('OWNER_MOVED');
    expect(asked).toEqual([{ forwarded: true, agentId: 'a1' }]);
  });

  it('serves a valid forwarded request it owns, knowing who forwarded it', async () => {
    const app = routedApp(() => ({ kind: 'local' }));
    const res = await app.request('/v1/agents/a1/events', signedInit('GET', '/v1/agents/a1/events'));
    expect(await res.json()).toEqual({ here: true, forwardedBy: 'replica-a' });
  });
});

describe("the app's route slot (AppDeps.replicas)", () => {
  it('is refused at registration with a route but no forwarder, and absent without a route', () => {
    expect(() => routeSlot({ key: KEY, route: () => ({ kind: 'local' }) })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
    expect(routeSlot({ key: KEY })).toBeUndefined();
    expect(routeSlot(undefined)).toBeUndefined();
  });

  let api: Api | undefined;
  let owner: Listening | undefined;
  afterEach(async () => {
    await api?.close();
    await owner?.close();
  });

  it("asks the route after the tenant's key, with the agent id, and forwards what it says", async () => {
    owner = await listen(ownerApp(newOwnerState()));
    const ownerUrl = owner.url;
    const asked: RouteRequest[] = [];
    const forwarder = createForwarder({ replica: { id: 'front', key: KEY } });
    api = await makeApi(
      {},
      {
        app: {
          replicas: {
            key: KEY,
            forwarder,
            route: (_c, r) => {
              asked.push(r);
              return r.agentId === 'elsewhere'
                ? { kind: 'forward', url: ownerUrl, replicaId: 'owner' }
                : { kind: 'local' };
            },
          },
        },
      },
    );
    // A wrong key is refused before the route is asked.
    expect((await api.request('wrong-key', 'GET', '/v1/agents/elsewhere/echo')).status).toBe(401);
    expect(asked).toEqual([]);
    const forwarded = await api.request(api.keyA, 'POST', '/v1/agents/elsewhere/echo?q=1', { a: 1 });
    expect(forwarded.status).toBe(200);
    expect(forwarded.json).toMatchObject({
      path: '/v1/agents/elsewhere/echo',
      search: '?q=1',
      body: '{"a":1}',
      forwardedBy: 'front',
      headers: { authorization: `Bearer ${api.keyA}` },
    });
    const local = await api.createAgent(api.keyA);
    expect((await api.request(api.keyA, 'GET', `/v1/agents/${local.id}`)).status).toBe(200);
    expect(asked.map((r) => r.agentId)).toEqual(['elsewhere', undefined, local.id]);
    // A client's own forwarding headers are refused before anything else.
    const forged = await api.request(api.keyA, 'GET', `/v1/agents/${local.id}`, undefined, {
      'x-dsh-forwarded-by': 'owner',
    });
    expect(forged.status).toBe(401);
    expect(forged.json.error.code).toBe('FORWARD_UNVERIFIED');
    forwarder.close();
  });
});
