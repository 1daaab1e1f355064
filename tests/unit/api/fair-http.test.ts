// Call batches over HTTP take turns (host/api/fair.ts) while reads never wait for one: a scheduler
// that holds every turn until the test lets it go shows which requests wait, for whom, and that a
// held batch still ends as the API says once it runs (an agent deleted meanwhile is gone).

import type { Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createConnectionGuard } from '../../../host/api/connections.ts';
import type { FairScheduler } from '../../../host/api/fair.ts';
import { type Api, makeApi } from './harness.ts';

/** Every turn waits until release(); `keys` says who asked, in order. */
const holdingScheduler = () => {
  const keys: string[] = [];
  const held: (() => void)[] = [];
  const scheduler: FairScheduler = {
    turn: (key) => {
      keys.push(key);
      return new Promise<void>((resolve) => held.push(resolve));
    },
    run: async (key, fn) => {
      await scheduler.turn(key);
      return fn();
    },
    waiting: () => held.length,
  };
  return {
    scheduler,
    keys,
    /** Lets every waiting turn go. */
    release: () => {
      for (const go of held.splice(0)) go();
    },
  };
};

const until = async (check: () => boolean): Promise<void> => {
  for (const end = Date.now() + 5000; !check(); ) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('fair turns over HTTP', () => {
  let api: Api;
  let fair: ReturnType<typeof holdingScheduler>;
  let server: ServerType;
  let url: string;

  beforeEach(async () => {
    fair = holdingScheduler();
    // 8 connections, at most 6 unauthenticated, 2 per tenant.
    const connections = createConnectionGuard({
      maxConnections: 8,
      reserve: 2,
      firstByteMs: 10_000,
      perTenant: 2,
    });
    api = await makeApi({}, { app: { fair: fair.scheduler, connections } });
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: api.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
      connections.attach(s as Server);
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    fair.release();
    await new Promise((r) => server.close(r));
    await api.close();
  });

  const http = (key: string, method: string, path: string, body?: unknown) =>
    fetch(`${url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it('a batch waits for its turn, before and after admission, while a read of the agent answers', async () => {
    const agent = await api.createAgent(api.keyA);
    const batch = http(api.keyA, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [{ id: 'r', name: 'read', arguments: { file_path: 'missing.txt' } }],
    });
    await until(() => fair.keys.length === 1);
    const tenant = (await api.store.tenants.verifyKey(api.keyA))?.id;
    // Before the middleware, in its tenant's queue.
    expect(fair.keys).toEqual([tenant]);
    const read = await http(api.keyA, 'GET', `/v1/agents/${agent.id}`);
    expect(read.status).toBe(200);
    expect(fair.keys).toHaveLength(1);
    fair.release();
    // Again after admission.
    await until(() => fair.keys.length === 2);
    expect(fair.keys[1]).toBe(tenant);
    fair.release();
    const res = await batch;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { results: { id: string }[] }).results.map((r) => r.id)).toEqual(['r']);
  });

  it('a batch still waiting when its agent is deleted runs nothing once its turn comes', async () => {
    const agent = await api.createAgent(api.keyA);
    let settled = false;
    const batch = http(api.keyA, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [{ id: 'w', name: 'write', arguments: { file_path: 'late.txt', content: 'x' } }],
    }).finally(() => {
      settled = true;
    });
    await until(() => fair.keys.length === 1);
    // Deleting takes no turn and does not wait for the held batch.
    expect((await http(api.keyA, 'DELETE', `/v1/agents/${agent.id}`)).status).toBe(204);
    fair.release();
    // Its second turn (after admission), or its answer if it ends before one: the scheduler's
    // queue is empty right after release(), so it cannot tell which.
    await until(() => fair.keys.length >= 2 || settled);
    fair.release();
    const res = await batch;
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
  });

  it('a request without a valid key takes no turn: it is refused at once', async () => {
    const agent = await api.createAgent(api.keyA);
    const res = await http('not-a-key', 'POST', `/v1/agents/${agent.id}/calls`, { calls: [] });
    expect(res.status).toBe(401);
    expect(fair.keys).toEqual([]);
  });

  it('a waiting batch holds its connection for its tenant: ones without a key cannot displace it', async () => {
    const agent = await api.createAgent(api.keyA);
    const batch = http(api.keyA, 'POST', `/v1/agents/${agent.id}/calls`, {
      calls: [{ id: 'r', name: 'read', arguments: { file_path: 'missing.txt' } }],
    });
    await until(() => fair.keys.length === 1);
    // More silent connections than the unauthenticated ones may hold: the oldest of them give way.
    const silent: Socket[] = [];
    for (let i = 0; i < 10; i++) {
      const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
      socket.on('error', () => undefined);
      await new Promise((r) => socket.once('connect', r));
      silent.push(socket);
    }
    fair.release();
    await until(() => fair.keys.length === 2);
    fair.release();
    const res = await batch;
    expect(res.status).toBe(200);
    for (const socket of silent) socket.destroy();
  });
});
