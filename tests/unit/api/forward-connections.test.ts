// Connection admission on the replica that owns the agent (host/api/connections.ts with
// host/api/forward/verify.ts): the connections another replica forwards on carry many tenants'
// requests in turn, so they are bound to no tenant and count against no tenant's cap; a client's
// own connections still do.
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, expect, it } from 'vitest';
import { claimConnection, createConnectionGuard } from '../../../host/api/connections.ts';
import type { ApiEnv } from '../../../host/api/env.ts';
import { errorHandler } from '../../../host/api/errors.ts';
import { forwardHeaders } from '../../../host/api/forward/sign.ts';
import { verifyForwarded } from '../../../host/api/forward/verify.ts';
import { KEY } from './forward-servers.ts';

const servers: { close(): void; closeAllConnections(): void }[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** A server whose one route claims its connection for tenant `:tenant`, as the tenant scope does. */
const start = async (perTenant: number): Promise<string> => {
  const guard = createConnectionGuard({ maxConnections: 100, reserve: 10, firstByteMs: 10_000, perTenant });
  const app = new Hono<ApiEnv>();
  app.onError(errorHandler());
  app.use(verifyForwarded({ key: KEY }));
  app.get('/t/:tenant', (c) => {
    claimConnection(guard, c, c.req.param('tenant'));
    return c.text('ok');
  });
  return new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () =>
      resolve(`http://127.0.0.1:${(s.address() as AddressInfo).port}`),
    );
    guard.attach(s as never);
    servers.push(s as never);
  });
};

/** One request on a connection of its own (kept open: a fresh agent each time). */
const get = (url: string, headers: Record<string, string> = {}): Promise<number> =>
  new Promise((resolve, reject) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const req = request(url, { agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });

const signed = (path: string) =>
  forwardHeaders(KEY, {
    replicaId: 'front',
    timestamp: Date.now(),
    method: 'GET',
    target: path,
    client: '203.0.113.7',
  });

it("counts a replica's connections against no tenant's cap, and a client's own against its tenant's", async () => {
  const base = await start(1);
  // Three connections from a replica, each carrying tenant t1's request: none is refused.
  for (let i = 0; i < 3; i++) expect(await get(`${base}/t/t1`, signed('/t/t1'))).toBe(200);
  // t1's own first connection is still admitted, its second is over its cap.
  expect(await get(`${base}/t/t1`)).toBe(200);
  expect(await get(`${base}/t/t1`)).toBe(429);
});
