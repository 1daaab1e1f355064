// A hostile node agent (docs/nodes.md, docs/security.md "Nodes"): a machine holding a valid node
// certificate whose agent answers the control plane with what it likes. Its reach must end at its
// own agents: an answer too large to hold, or one trickled to outlast the call's deadline, fails
// that call (SANDBOX_UNAVAILABLE, NODE_UNREACHABLE) and never fills the control plane's memory or
// holds a call forever; a pool listed as thousands of pooled sandboxes is claimed and held no
// further than a node's pool can be (MAX_CLAIMS); limits that are not positive integers refuse the node at connect, and no
// node's defaults pass the cluster's maxima, so a first node (whose defaults placement takes) cannot
// make every other node refuse the agents it is given. A raw HTTPS server with the node's
// certificate stands in for the node agent.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  DOCKER_DEFAULT_LIMITS,
  DOCKER_DEFAULT_MAXIMA,
  resolveLimits,
} from '../../../host/sandbox/docker/config.ts';
import { CAPACITY_BOUNDS, createPlacement, saneCapacity } from '../../../host/sandbox/nodes/placement.ts';
import { connectRemoteNode, type RemoteNode } from '../../../host/sandbox/nodes/remote/client.ts';
import { MAX_ANSWER_BYTES, MAX_CLAIMS, PROTOCOL } from '../../../host/sandbox/nodes/remote/protocol.ts';
import { createWarmSessions } from '../../../host/sandbox/nodes/remote/warm.ts';
import type { NodeSandbox, SandboxdChannel, SandboxNode } from '../../../host/sandbox/nodes/types.ts';
import { makeCa, makeCert, makeControlCert } from '../../../scripts/node-certs.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-node-hostile-'));
const pem = (name: string): string => readFileSync(join(dir, name), 'utf8');

const honestInfo = { defaults: DOCKER_DEFAULT_LIMITS, maxima: DOCKER_DEFAULT_MAXIMA };
/** The limits the hostile node's `info` answers. */
let info: Record<string, unknown> = honestInfo;
/** How the hostile node answers the next `state` call (and the error of an upgrade). */
let answer: (res: ServerResponse) => void = (res) => res.end('{"state":"running"}');
/** Bytes the hostile node managed to send on its last answer. */
let sent = 0;
const timers = new Set<NodeJS.Timeout>();

let server: Server;
let node: RemoteNode;

/** What the node's adopt asks (its first step), and each adopt body it received, whole. */
let questions: { sandboxes: string[]; agents: string[] } = { sandboxes: [], agents: [] };
const adoptBodies: string[] = [];

/** The node's adopt: the questions to `ask`, the names of the claims to the second step. */
const adoptCall = (req: IncomingMessage, res: ServerResponse): void => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    adoptBodies.push(body);
    const a = JSON.parse(body) as { ask?: boolean; claim?: string[] };
    res.end(JSON.stringify(a.ask === true ? { questions } : { names: a.claim ?? [] }));
  });
};

/** Writes `chunk` for as long as the connection takes it, up to `total` bytes. */
const pour = (res: ServerResponse, chunk: Buffer, total: number): void => {
  sent = 0;
  const more = (): void => {
    while (sent < total && !res.destroyed) {
      sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', more);
    }
    res.end();
  };
  res.on('error', () => {});
  more();
};

beforeAll(async () => {
  makeCa(dir);
  makeCert(dir, dir, 'one', ['127.0.0.1']);
  makeControlCert(dir, dir, 'control', ['test']);
  server = createServer(
    {
      cert: pem('one.pem'),
      key: pem('one.key'),
      ca: pem('ca.pem'),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      if (req.url === '/v1/adopt') return void adoptCall(req, res);
      req.resume();
      if (req.url === '/v1/info') {
        res.end(JSON.stringify({ protocol: PROTOCOL, ready: 0, ...info }));
        return;
      }
      res.statusCode = req.url?.startsWith('/v1/open') ? 500 : 200;
      answer(res);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  node = await connect();
});

const connect = (): Promise<RemoteNode> =>
  connectRemoteNode({
    name: 'one',
    url: `https://127.0.0.1:${(server.address() as { port: number }).port}`,
    instance: 'test',
    cert: pem('control.pem'),
    key: pem('control.key'),
    ca: pem('ca.pem'),
    timeoutMs: 1500,
  });

afterAll(async () => {
  for (const t of timers) clearInterval(t);
  await node?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

it('refuses an answer larger than the protocol allows, without reading it all', async () => {
  const total = 64 * MAX_ANSWER_BYTES;
  answer = (res) => pour(res, Buffer.alloc(64 * 1024, 0x20), total);
  await expect(node.state('a')).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE', data: { node: 'one' } });
  expect(sent).toBeLessThan(total);
});

it("refuses an upgrade's error answer larger than the protocol allows", async () => {
  const total = 64 * MAX_ANSWER_BYTES;
  answer = (res) => pour(res, Buffer.alloc(64 * 1024, 0x20), total);
  await expect(node.open('a')).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE', data: { node: 'one' } });
  expect(sent).toBeLessThan(total);
});

const trickle = (res: ServerResponse): void => {
  res.write('{"state":"running"');
  const t = setInterval(() => {
    if (res.destroyed) {
      clearInterval(t);
      timers.delete(t);
    } else res.write(' ');
  }, 200);
  timers.add(t);
  res.on('error', () => {});
};

it('fails a call whose answer trickles past its deadline with NODE_UNREACHABLE', async () => {
  answer = trickle;
  const started = Date.now();
  await expect(node.state('a')).rejects.toMatchObject({ code: 'NODE_UNREACHABLE', data: { node: 'one' } });
  expect(Date.now() - started).toBeLessThan(4000);
});

it('fails an upgrade whose refusal trickles past the deadline with NODE_UNREACHABLE', async () => {
  answer = trickle;
  const started = Date.now();
  await expect(node.open('a')).rejects.toMatchObject({ code: 'NODE_UNREACHABLE', data: { node: 'one' } });
  expect(Date.now() - started).toBeLessThan(4000);
});

it('still serves honest answers on the same node after that', async () => {
  answer = (res) => res.end('{"state":"running"}');
  expect(await node.state('a')).toBe('running');
});

it('refuses a node whose limits are not positive whole numbers, at connect', async () => {
  const junk: Array<Record<string, unknown>> = [
    { defaults: { ...DOCKER_DEFAULT_LIMITS, memoryBytes: -1 }, maxima: DOCKER_DEFAULT_MAXIMA },
    { defaults: { ...DOCKER_DEFAULT_LIMITS, pids: 'many' }, maxima: DOCKER_DEFAULT_MAXIMA },
    { defaults: DOCKER_DEFAULT_LIMITS, maxima: { ...DOCKER_DEFAULT_MAXIMA, nanoCpus: 1.5 } },
    { defaults: DOCKER_DEFAULT_LIMITS, maxima: { ...DOCKER_DEFAULT_MAXIMA, maxReadBytes: null } },
    { defaults: DOCKER_DEFAULT_LIMITS, maxima: { ...DOCKER_DEFAULT_MAXIMA, diskBytes: 0 } },
    { defaults: DOCKER_DEFAULT_LIMITS, maxima: 'none' },
    { defaults: DOCKER_DEFAULT_LIMITS },
  ];
  try {
    for (const limits of junk) {
      info = limits;
      await expect(connect(), JSON.stringify(limits)).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
        message: expect.stringContaining('Node one'),
      });
    }
  } finally {
    info = honestInfo;
  }
});

it("never takes a first node's defaults past the cluster's maxima (another node would refuse every agent)", () => {
  const honest = (name: string, maxima = DOCKER_DEFAULT_MAXIMA) =>
    ({
      name,
      defaults: DOCKER_DEFAULT_LIMITS,
      maxima,
      pool: { ready: 0, filled: async () => {} },
      capacity: async () => ({
        node: name,
        cpus: 1,
        memoryBytes: 1,
        sandboxes: 0,
        running: 0,
        pool: { ready: 0 },
      }),
      close: async () => {},
    }) as unknown as SandboxNode<never>;
  const greedy = {
    ...honest('a'),
    defaults: {
      memoryBytes: 2 ** 50,
      nanoCpus: 2 ** 40,
      pids: 2 ** 30,
      maxReadBytes: 2 ** 40,
      maxOutputBytes: 2 ** 40,
      diskBytes: 2 ** 50,
    },
  } as unknown as SandboxNode<never>;
  const b = honest('b', { ...DOCKER_DEFAULT_MAXIMA, diskBytes: 2 ** 30 });
  const p = createPlacement([greedy, b]);
  // What the control plane asks of b for an agent with no limits of its own, as b checks it.
  const asked = resolveLimits(p.defaults, p.maxima, {});
  expect(() => resolveLimits(b.defaults, b.maxima, asked)).not.toThrow();
});

it('claims and holds no more warm sessions than a pool can have, however many pooled ids a node lists', async () => {
  let claimed = 0;
  const warm = createWarmSessions({
    list: async () => ({ ids: Array.from({ length: 10_000 }, (_, i) => i.toString(16)), size: 10_000 }),
    claim: async () => {
      claimed++;
      const channel = { closed: new Promise<void>(() => {}), close: () => {} } as unknown as SandboxdChannel;
      return { channel, claim: 'a'.repeat(32) };
    },
    limits: DOCKER_DEFAULT_LIMITS,
    everyMs: 60_000,
    onError: () => {},
  });
  warm.start({ make: async () => ({}), drop: async () => {} });
  await warm.refresh();
  expect(claimed).toBeLessThanOrEqual(MAX_CLAIMS);
  expect(warm.claims().length).toBeLessThanOrEqual(MAX_CLAIMS);
  await warm.close();
});

it("counts a node's pool only as whole, non-negative numbers (the /metrics gauge adds them up)", async () => {
  info = { ...honestInfo, ready: 'lots' };
  const liar = await connect();
  try {
    expect(liar.pool.ready).toBe(0);
    for (const ready of ['7', -3, 1.5, 1e300, null]) {
      answer = (res) =>
        res.end(
          JSON.stringify({
            node: 'one',
            cpus: 1,
            memoryBytes: 1,
            sandboxes: 0,
            running: 0,
            pool: { ready, size: 2 },
            runtimes: ['runc'],
          }),
        );
      await liar.capacity().catch(() => {});
      expect(Number.isSafeInteger(liar.pool.ready) && liar.pool.ready >= 0, String(ready)).toBe(true);
    }
  } finally {
    info = honestInfo;
    answer = (res) => res.end('{"state":"running"}');
    await liar.close();
  }
});

it('adopts among 100k agents sending the node only the answers about its own containers', async () => {
  const agents = Array.from({ length: 100_000 }, (_, i) => `agt_${String(i).padStart(21, '0')}`);
  const sandboxOf = (i: number): string => createHash('sha256').update(String(i)).digest('hex');
  const knownAt = Date.now();
  // The node holds agent 3's container, a pool container a crash left assigned to agent 7, a
  // legacy container nobody records, and the container of an agent the store does not know.
  questions = { sandboxes: [sandboxOf(7), 'f'.repeat(64)], agents: [agents[3] as string, 'agt_gone'] };
  adoptBodies.length = 0;
  await node.adopt({
    claim: agents.map((_, i) => sandboxOf(i)),
    assigned: new Map(agents.map((a, i) => [sandboxOf(i), a])),
    known: agents,
    knownAt,
  });
  const sent = adoptBodies.reduce((n, b) => n + Buffer.byteLength(b), 0);
  // Before, one body of every agent id and sandbox (19,000,075 bytes here, past the node's 1 MiB
  // limit); now 300.
  expect(sent).toBeLessThan(1024);
  expect(adoptBodies.map((b) => JSON.parse(b))).toEqual([
    { ask: true, claim: 'ask', knownAt },
    {
      claim: [sandboxOf(7)],
      assigned: [sandboxOf(7), agents[7]],
      replicas: false,
      unknown: ['agt_gone'],
      knownAt,
    },
  ]);
  // No agent the node did not ask about is named to it.
  expect(adoptBodies.join('')).not.toContain(agents[8]);
  expect(adoptBodies.join('')).not.toContain(agents[3]);
});

it("adopts nothing from a node's questions that are not short strings, and sends no more for them", async () => {
  questions = {
    sandboxes: 'all' as unknown as string[],
    agents: [{ every: true }, 'x'.repeat(500)] as string[],
  };
  adoptBodies.length = 0;
  await node.adopt({ claim: ['c1'], assigned: new Map([['c1', 'agt_1']]), known: ['agt_1'], knownAt: 1 });
  expect(JSON.parse(adoptBodies[1] as string)).toEqual({
    claim: [],
    assigned: [],
    replicas: false,
    unknown: [],
    knownAt: 1,
  });
});

/** A node placement may place on: `holds` answers its find; open says which node it reached. */
const member = (name: string, holds: (agentId: string) => NodeSandbox | undefined, adopted: string[] = []) =>
  ({
    name,
    defaults: DOCKER_DEFAULT_LIMITS,
    maxima: DOCKER_DEFAULT_MAXIMA,
    pool: { ready: 0, filled: async () => {} },
    find: async (agentId: string) => holds(agentId),
    open: async () => ({ name }) as unknown as SandboxdChannel,
    state: async () => 'running',
    adopt: async () => adopted,
    capacity: async () => ({
      node: name,
      cpus: 4,
      memoryBytes: 8 * 1024 ** 3,
      sandboxes: 0,
      running: 0,
      pool: { ready: 0, size: 0 },
      runtimes: ['runc'],
    }),
    close: async () => {},
  }) as unknown as SandboxNode<never>;

const sandboxOf = (id: string, tenantId?: string): NodeSandbox => ({
  id,
  limits: DOCKER_DEFAULT_LIMITS,
  ...(tenantId === undefined ? {} : { tenantId }),
});

it('sends an agent with no recorded node to no node when two claim it (NODE_CONFLICT), and records none', async () => {
  const honest = member('a', (id) => (id === 'agt_old' ? sandboxOf('c1', 't1') : undefined));
  // It says it holds every agent, with the very sandbox (a copied engine would): which is the agent's?
  const copy = member('h', () => sandboxOf('c1', 't1'));
  const p = createPlacement([copy, honest], { agentOf: async () => ({ tenantId: 't1', sandboxId: 'c1' }) });
  await expect(p.open('agt_old')).rejects.toMatchObject({
    code: 'NODE_CONFLICT',
    data: { nodes: ['h', 'a'] },
  });
  expect(p.nodeOf('agt_old')).toBeUndefined();
});

it("counts only a node's find that matches the store's record of the agent, and records the node it found", async () => {
  const errors: unknown[] = [];
  // The store records agt_old's sandbox (c1, a pooled container: no tenant label) and agt_new's tenant only.
  const records = new Map([
    ['agt_old', { tenantId: 't1', sandboxId: 'c1' }],
    ['agt_new', { tenantId: 't1' }],
    ['agt_elsewhere', { tenantId: 't1', sandboxId: 'c9' }],
  ]);
  const honest = member('a', (id) =>
    id === 'agt_old' ? sandboxOf('c1') : id === 'agt_new' ? sandboxOf('c2', 't1') : undefined,
  );
  for (const tenant of [undefined, 't1', 'another-tenant']) {
    // Placed first, and claiming every agent id it is asked about, without knowing its sandbox.
    const hostile = member('h', () => sandboxOf('f'.repeat(64), tenant));
    const options = {
      agentOf: async (id: string) => records.get(id),
      onError: (e: unknown) => errors.push(e),
    };
    const p = createPlacement([hostile, honest], options);
    expect(await p.open('agt_old')).toEqual({ name: 'a' });
    expect(p.nodeOf('agt_old')).toBe('a');
    // Alone, it gets nothing: an agent it claims is sent to no node.
    await expect(p.open('agt_elsewhere')).rejects.toMatchObject({
      code: 'NODE_CONFLICT',
      data: { nodes: ['h'] },
    });
    expect(p.nodeOf('agt_elsewhere')).toBeUndefined();
    // With no sandbox recorded the agent has none yet (its first is being made): no claim on it
    // counts, a right guess of its tenant (learnt from other agents placed there) included, and
    // none stops it: it is not found, and its first ensure places it by capacity.
    expect(await p.find('agt_new')).toBeUndefined();
    expect(p.nodeOf('agt_new')).toBeUndefined();
    // Its adopt naming agents records nothing either.
    const adopting = createPlacement([member('h', () => sandboxOf('f'), ['agt_x']), honest], options);
    await adopting.adopt();
    expect(adopting.nodeOf('agt_x')).toBeUndefined();
  }
  expect(errors).toContainEqual(expect.objectContaining({ code: 'SANDBOX_PROTOCOL', data: { node: 'h' } }));
});

it("takes a node's capacity as whole numbers within bounds, and a huge one draws no more new agents than a roomy honest node", async () => {
  const huge = 1e300;
  expect(
    saneCapacity({
      node: 'h',
      cpus: huge,
      memoryBytes: huge,
      diskFreeBytes: huge,
      sandboxes: 2.5,
      running: 99,
      pool: { ready: 1e9, size: 3 },
      runtimes: ['runc'],
    }),
  ).toEqual({
    node: 'h',
    cpus: CAPACITY_BOUNDS.cpus,
    memoryBytes: CAPACITY_BOUNDS.memoryBytes,
    diskFreeBytes: CAPACITY_BOUNDS.diskFreeBytes,
    sandboxes: 2,
    running: 2,
    pool: { ready: 3, size: 3 },
    runtimes: ['runc'],
  });
  const placed = new Map<string, number>();
  const node = (name: string, capacity: () => unknown) =>
    ({
      ...member(name, () => undefined),
      ensure: async () => {
        placed.set(name, (placed.get(name) ?? 0) + 1);
        return sandboxOf(`${name}-${placed.get(name)}`);
      },
      capacity,
    }) as unknown as SandboxNode<never>;
  const honest = (name: string) =>
    node(name, async () => ({
      node: name,
      cpus: 16,
      memoryBytes: 64 * 1024 ** 3,
      sandboxes: placed.get(name) ?? 0,
      running: placed.get(name) ?? 0,
      pool: { ready: 0, size: 0 },
      runtimes: ['runc'],
    }));
  // Always empty, the largest machine there is, and sandboxes as large as it likes (its own maxima,
  // which it declares itself: they must not lift its cap).
  const liar = {
    ...node('h', async () => ({
      node: 'h',
      cpus: huge,
      memoryBytes: huge,
      sandboxes: 0,
      running: 0,
      pool: { ready: huge, size: huge },
      runtimes: ['runc'],
    })),
    maxima: {
      ...DOCKER_DEFAULT_MAXIMA,
      nanoCpus: Number.MAX_SAFE_INTEGER,
      memoryBytes: Number.MAX_SAFE_INTEGER,
    },
  } as unknown as SandboxNode<never>;
  // One whose code throws as it is asked: passed over, never placement's failure.
  const broken = node('x', () => {
    throw new Error('boom');
  });
  const p = createPlacement([liar, honest('a'), honest('b'), broken], { capacityTtlMs: 0, sample: 4 });
  // Each agent another tenant's: the per-tenant spread plays no part.
  for (let i = 0; i < 30; i++)
    await p.ensure({ agentId: `agt_${i}`, tenantId: `t${i}`, limits: DOCKER_DEFAULT_LIMITS });
  // Before, every one went to h (its share was 1e300); now a and b take theirs while they have
  // room for a sandbox at its maxima (16 CPUs / 8 sandboxes: 2).
  expect((placed.get('a') ?? 0) + (placed.get('b') ?? 0)).toBeGreaterThanOrEqual(14);
  expect(placed.get('x')).toBeUndefined();
});
