// Warm sessions on a remote node (host/sandbox/nodes/remote/warm.ts) without an engine: the node
// server in front of a fake node with a real warm pool (docker/pool.ts) whose sandboxd stands in as
// an echo, and control planes connected to it with warm hooks. A control plane's hook runs on each
// pooled sandbox's channel ahead (the bytes cross the node), and ensure hands the agent the session
// of the pooled sandbox it got; two control planes on one node's pool never hold the same pooled
// channel, and one never gets a pooled sandbox whose channel the other holds; a claim the node did
// not hand out takes nothing; a session whose pooled sandbox the node dropped is dropped; a node
// without pooled channels (an older one) is served as before; a node connected late gets the hooks.
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DOCKER_DEFAULT_LIMITS } from '../../../host/sandbox/docker/config.ts';
import { createWarmPool, type PoolItem, type WarmPool } from '../../../host/sandbox/docker/pool.ts';
import { createPlacement } from '../../../host/sandbox/nodes/placement.ts';
import { connectRemoteNode, type RemoteNode } from '../../../host/sandbox/nodes/remote/client.ts';
import { lateRemoteNode } from '../../../host/sandbox/nodes/remote/late.ts';
import { type NodeServer, serveNode } from '../../../host/sandbox/nodes/remote/server.ts';
import type { PooledChannels, SandboxNode, WarmHooks } from '../../../host/sandbox/nodes/types.ts';
import { makeCa, makeCert, makeControlCert } from '../../../scripts/node-certs.ts';
import { echoPipe as echo } from '../../helpers/echo-pipe.ts';
import { fakeCapacity, fakeNode } from '../../helpers/fake-node.ts';
import { servingAs, tlsOf } from '../../helpers/node-tls.ts';
import { until } from '../../helpers/until.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-node-warm-'));
const ca = join(dir, 'ca');

type PooledNode = SandboxNode<unknown> & PooledChannels & { pool: WarmPool; items: PoolItem[] };

/** A node whose pool holds `size` echo sandboxes; ensure takes a pooled one as the engine's node does. */
const pooledNode = (size: number, withChannels = true): PooledNode => {
  let made = 0;
  const items: PoolItem[] = [];
  const pool = createWarmPool({
    size,
    make: async () => {
      made++;
      const item = {
        container: { id: made.toString(16).padStart(12, '0') },
        channel: echo(),
        warm: undefined,
      } as unknown as PoolItem;
      items.push(item);
      return item;
    },
    discard: async (i) => i.channel.close(),
    onError: () => {},
  });
  const node: PooledNode = {
    ...fakeNode('fake'),
    pool,
    items,
    ensure: async (spec) => {
      const item = pool.take(spec.pooled);
      return { id: item?.container.id ?? `new-${spec.agentId}`, limits: spec.limits };
    },
    open: async () => echo(),
    capacity: async () => fakeCapacity('fake', { pool: { ready: pool.ready, size } }),
    close: () => pool.close(),
    unclaimed: () => pool.unclaimed(),
    claim: (id) => pool.claim(id),
    poolFor: (claims) => ({ ready: pool.readyFor(claims), size }),
  };
  if (!withChannels) {
    const { unclaimed: _u, claim: _c, poolFor: _p, ...older } = node;
    return older as PooledNode;
  }
  return node;
};

/** Warm hooks that verify each channel with an echo of `by`, and note what they made and dropped. */
const hooks = (by: string) => {
  const made: string[] = [];
  const dropped: string[] = [];
  const h: WarmHooks = {
    async make(channel) {
      const said = new Promise<string>((resolve) =>
        channel.input.once('data', (c: Buffer) => resolve(c.toString())),
      );
      channel.output.write(by);
      const answer = await said;
      made.push(answer);
      return { by: answer };
    },
    async drop(warm) {
      dropped.push((warm as { by: string }).by);
    },
  };
  return { h, made, dropped };
};

let server: NodeServer | undefined;
const opened: RemoteNode[] = [];

/** Serves `node` to every instance, or each instance its own node. */
const serve = async (
  node: SandboxNode<unknown> | ((instance: string) => SandboxNode<unknown>),
): Promise<string> => {
  server = await serveNode({
    ...servingAs(ca),
    nodeFor: typeof node === 'function' ? node : () => node,
  });
  return `https://127.0.0.1:${server.port}`;
};

const remoteOptions = (url: string, instance = 'test') => ({
  name: 'one',
  url,
  instance,
  ...tlsOf(ca, 'control'),
  timeoutMs: 5000,
  warmEveryMs: 20,
});

const connect = async (url: string, instance?: string): Promise<RemoteNode> => {
  const n = await connectRemoteNode(remoteOptions(url, instance));
  opened.push(n);
  return n;
};

const spec = (agentId: string) => ({ agentId, tenantId: 't', limits: DOCKER_DEFAULT_LIMITS });

/** One raw upgrade or call on the node: its status line's code. */
const rawStatus = (path: string, method: 'GET' | 'POST', body?: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port: server?.port,
      path,
      method,
      ...tlsOf(ca, 'control'),
      agent: false,
      headers: {
        'x-dsh-instance': 'test',
        ...(method === 'GET' ? { connection: 'Upgrade', upgrade: 'dsh-node/1' } : {}),
      },
    });
    req.once('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.once('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', reject);
    req.end(body);
  });

/** One raw call on the node (as another control plane of the instance would make it): its status and JSON. */
const rawCall = (method: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> =>
  new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port: server?.port,
      path: `/v1/${method}`,
      method: 'POST',
      ...tlsOf(ca, 'control'),
      agent: false,
      headers: { 'x-dsh-instance': 'test', 'content-type': 'application/json' },
    });
    req.once('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
      });
      res.once('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
    });
    req.once('error', reject);
    req.end(JSON.stringify(body));
  });

/** `node` with its `pooled` calls counted (the server answers each from unclaimed()). */
const counted = (node: PooledNode): { node: PooledNode; asked: () => number } => {
  let asked = 0;
  const unclaimed = node.unclaimed.bind(node);
  node.unclaimed = () => {
    asked++;
    return unclaimed();
  };
  return { node, asked: () => asked };
};

beforeAll(() => {
  makeCa(ca);
  makeCert(ca, ca, 'one', ['127.0.0.1']);
  makeControlCert(ca, ca, 'control', ['test', 'empty', 'full']);
});

afterEach(async () => {
  for (const n of opened.splice(0)) await n.close();
  await server?.close();
  server = undefined;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('warm sessions on a remote node', () => {
  it("hands the agent the session made ahead on its pooled sandbox's channel", async () => {
    const fake = pooledNode(2);
    const node = await connect(await serve(fake));
    const { h, made } = hooks('cp-a');
    node.warmWith?.(h);
    await node.pool.filled();
    // The hook's bytes crossed the node and came back from the pooled sandbox's sandboxd.
    expect(made).toEqual(['cp-a', 'cp-a']);
    const placed = await node.ensure(spec('a1'));
    expect(fake.items.map((i) => i.container.id)).toContain(placed.id);
    expect(placed.warm).toEqual({ by: 'cp-a' });
    // An agent that asks for another disk gets no pooled sandbox, and no session from here.
    const other = await node.ensure({
      ...spec('a2'),
      limits: { ...DOCKER_DEFAULT_LIMITS, diskBytes: 2 * (DOCKER_DEFAULT_LIMITS.diskBytes ?? 2 ** 30) },
    });
    expect(other.warm).toBeUndefined();
  });

  it('never lets two control planes hold one pooled channel, nor one take a sandbox the other holds', async () => {
    const fake = pooledNode(3);
    const url = await serve(fake);
    const [a, b] = [await connect(url), await connect(url)];
    const [ha, hb] = [hooks('A'), hooks('B')];
    a?.warmWith?.(ha.h);
    b?.warmWith?.(hb.h);
    await Promise.all([a?.pool.filled(), b?.pool.filled()]);
    await until(() => ha.made.length + hb.made.length === 3);
    expect(fake.unclaimed()).toEqual([]);
    // Every pooled sandbox is held by one of them: B's agents get B's, then fresh ones.
    const held = new Set(fake.items.map((i) => i.claim));
    expect(held.size).toBe(3);
    const heldByA = ha.made.length;
    const takenByB: string[] = [];
    for (let i = 0; i < 4; i++) {
      const placed = await (b as RemoteNode).ensure(spec(`b${i}`));
      if (placed.warm !== undefined) expect(placed.warm).toEqual({ by: 'B' });
      takenByB.push(placed.id);
    }
    // Each of A's sessions is still A's to hand over, on a sandbox B did not get.
    for (let i = 0; i < heldByA; i++) {
      const placed = await (a as RemoteNode).ensure(spec(`a${i}`));
      expect(placed.warm).toEqual({ by: 'A' });
      expect(takenByB).not.toContain(placed.id);
    }
  });

  it("counts in each control plane's capacity only the pooled sandboxes it can be given: its own and unclaimed ones", async () => {
    const fake = pooledNode(3);
    const url = await serve(fake);
    const [a, b] = [await connect(url), await connect(url)] as [RemoteNode, RemoteNode];
    const [ha, hb] = [hooks('A'), hooks('B')];
    a.warmWith?.(ha.h);
    b.warmWith?.(hb.h);
    await Promise.all([a.pool.filled(), b.pool.filled()]);
    await until(() => ha.made.length + hb.made.length === 3);
    expect(fake.pool.ready).toBe(3); // the node's pool is full, every one of them claimed
    const [ca, cb] = [await a.capacity(), await b.capacity()];
    expect([ca.pool, cb.pool]).toEqual([
      { ready: ha.made.length, size: 3 },
      { ready: hb.made.length, size: 3 },
    ]);
    expect([a.pool.ready, b.pool.ready]).toEqual([ha.made.length, hb.made.length]);
    // Placement's view of the node (GET /v1/nodes, the pool gauge) is the replica's too.
    const placed = createPlacement([a]);
    expect((await placed.nodes())[0]?.capacity?.pool.ready).toBe(ha.made.length);
    expect(placed.pool.ready).toBe(ha.made.length);
    // A third that holds no claim can use none of them.
    const c = await connect(url);
    expect((await c.capacity()).pool).toEqual({ ready: 0, size: 3 });
  });

  it('counts no pooled sandbox for claims it did not hand out, and refuses hostile ones', async () => {
    const fake = pooledNode(1);
    await serve(fake);
    await fake.pool.filled();
    const [id] = fake.unclaimed();
    expect((await rawCall('capacity', {})).json.pool).toEqual({ ready: 1, size: 1 });
    fake.claim(id as string);
    const forged = { pooled: [{ id, claim: '0'.repeat(32) }] };
    expect((await rawCall('capacity', forged)).json.pool).toEqual({ ready: 0, size: 1 });
    expect((await rawCall('filled', forged)).json).toEqual({ ready: 0 });
    for (const pooled of ['all', [{ id, claim: 'not hex' }], Array(65).fill({ id, claim: '0'.repeat(32) })])
      expect((await rawCall('capacity', { pooled })).status).toBe(400);
    expect((await rawCall('info', {})).json.ready).toBe(0);
  });

  it('stops asking a node whose pool holds none, and asks again once it says it has one', async () => {
    const empty = counted(pooledNode(0));
    const full = counted(pooledNode(1));
    const url = await serve((instance) => (instance === 'empty' ? empty.node : full.node));
    const [e, f] = [await connect(url, 'empty'), await connect(url, 'full')];
    e.warmWith?.(hooks('E').h);
    f.warmWith?.(hooks('F').h);
    // The node with a pool is asked every 20 ms (its next pooled sandbox is claimed as it comes);
    // over the same time, the one without was asked once, at the start.
    await until(() => full.asked() >= 10);
    expect(empty.asked()).toBe(1);
    // The node says a pool again (a restart with DSH_POOL_SIZE above 0): asked every 20 ms again.
    empty.node.poolFor = () => ({ ready: 0, size: 1 });
    expect((await e.capacity()).pool.size).toBe(1);
    await until(() => empty.asked() >= 5);
  });

  it('refuses claims it did not hand out: a second claim of one channel, a forged token, a bad id', async () => {
    const fake = pooledNode(1);
    await serve(fake);
    await fake.pool.filled();
    const [id] = fake.unclaimed();
    expect(await rawStatus(`/v1/open?pooled=${id}`, 'GET')).toBe(101);
    expect(await rawStatus(`/v1/open?pooled=${id}`, 'GET')).toBe(503);
    expect(await rawStatus('/v1/open?pooled=../../etc', 'GET')).toBe(400);
    // A forged claim takes nothing the node handed to another (the fresh sandbox instead).
    await until(() => fake.unclaimed().length === 1); // the first stream's close replaced the item
    const [next] = fake.unclaimed();
    const claimed = fake.claim(next as string);
    expect(claimed).toBeDefined();
    const forged = JSON.stringify({ ...spec('x'), pooled: [{ id: next, claim: '0'.repeat(32) }] });
    expect(await rawStatus('/v1/ensure', 'POST', forged)).toBe(200);
    expect(fake.pool.ready).toBe(1);
    const hostile = JSON.stringify({ ...spec('y'), pooled: [{ id: next, claim: 'not hex' }] });
    expect(await rawStatus('/v1/ensure', 'POST', hostile)).toBe(400);
  });

  it('drops a session whose pooled sandbox the node dropped', async () => {
    const fake = pooledNode(1);
    const node = await connect(await serve(fake));
    const { h, made, dropped } = hooks('cp');
    node.warmWith?.(h);
    await node.pool.filled();
    expect(made).toEqual(['cp']);
    fake.items[0]?.channel.close(); // its container went away behind the node's back
    await until(() => dropped.length === 1);
    await until(() => made.length === 2); // the node's new pooled sandbox is warmed in turn
  });

  it('serves a node without pooled channels as before', async () => {
    const fake = pooledNode(1, false);
    const node = await connect(await serve(fake));
    const { h, made } = hooks('cp');
    node.warmWith?.(h);
    await node.pool.filled();
    const placed = await node.ensure(spec('old'));
    expect(placed.id).toMatch(/^[0-9a-f]{12}$/);
    expect([placed.warm, made]).toEqual([undefined, []]);
  });

  it('gives the hooks to a node connected after they were given (one that answered late)', async () => {
    const fake = pooledNode(1);
    const late = lateRemoteNode(remoteOptions(await serve(fake)), fake);
    opened.push(late);
    const { h, made } = hooks('late');
    late.warmWith?.(h);
    await late.pool.filled(); // connects, then warms
    expect(made).toEqual(['late']);
    expect((await late.ensure(spec('l1'))).warm).toEqual({ by: 'late' });
  });
});
