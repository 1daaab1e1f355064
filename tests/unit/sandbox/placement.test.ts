// Placement among several nodes (host/sandbox/nodes/placement.ts) over fake nodes: a new agent
// goes to the freest sampled node, a burst spreads, an isolated child lands beside its parent, a
// cordoned node gets no new agent (its agents keep working), a node without the runtime asked for
// is passed over, a node that does not answer fails only its own agents' calls (at once, with
// NODE_UNREACHABLE naming it) while agents elsewhere carry on, and a node's hostile capacity
// answer (negative, NaN, Infinity, strings, missing) never wins a placement. With the store: an
// agent goes back to the node the store records (also after a restart, when that node is down or
// its container is gone: never placed again elsewhere), a silent node is found by the probe and
// comes back with it, and cordons set through the store hold. Snapshots: taken on the agent's node
// and named by it, deleted there, and an agent made from one placed on that node however free the
// others are (after a restart too, by the node its record names); refused with NODE_CORDONED or
// NODE_UNREACHABLE naming the node while it takes no new agents or does not answer, NOT_FOUND for a
// snapshot no node is known to hold, SNAPSHOT_UNSUPPORTED from a node that keeps none.
import { describe, expect, it, vi } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import { DOCKER_DEFAULT_LIMITS, DOCKER_DEFAULT_MAXIMA } from '../../../host/sandbox/docker/config.ts';
import { createDockerProvider } from '../../../host/sandbox/docker/provider.ts';
import { createPlacement, saneCapacity } from '../../../host/sandbox/nodes/placement.ts';
import type { NodeCapacity, SandboxdChannel, SandboxNode } from '../../../host/sandbox/nodes/types.ts';
import { createNodeStore } from '../../../host/store/nodes.ts';
import { until } from '../../helpers/until.ts';
import { tempDatabase } from '../store/harness.ts';

const GIB = 1024 ** 3;

interface Fake extends SandboxNode<never> {
  agents: Set<string>;
  /** Snapshot ids on this node's disk. */
  snaps: Set<string>;
  down: boolean;
  cap: Partial<NodeCapacity> | Record<string, unknown>;
  capacityAsked: number;
}

/** A node that keeps its agents in a set; `down` makes every call fail as the remote client does. */
function fake(name: string, cap: Partial<NodeCapacity> | Record<string, unknown> = {}): Fake {
  const f = {
    name,
    agents: new Set<string>(),
    snaps: new Set<string>(),
    down: false,
    cap,
    capacityAsked: 0,
  } as Fake;
  const up = async (): Promise<void> => {
    if (f.down) throw new SandboxError('SANDBOX_UNAVAILABLE', `Node ${name} cannot be reached.`);
  };
  // Every agent here is tenant t's (spec's), as its container's label says.
  const sandbox = (agentId: string) => ({
    id: `${name}:${agentId}`,
    limits: DOCKER_DEFAULT_LIMITS,
    tenantId: 't',
  });
  Object.assign(f, {
    defaults: DOCKER_DEFAULT_LIMITS,
    // Sandboxes as large as the biggest fake machine: free shares count whole (placement's shareCap).
    maxima: { ...DOCKER_DEFAULT_MAXIMA, nanoCpus: 4096e9, memoryBytes: 4096 * GIB },
    pool: { ready: 0, filled: async () => {} },
    async ensure(spec: { agentId: string; fromSnapshot?: string }) {
      await up();
      if (spec.fromSnapshot !== undefined && !f.snaps.has(spec.fromSnapshot))
        throw new SandboxError('NOT_FOUND', `This node has no snapshot ${spec.fromSnapshot}.`);
      const found = f.agents.has(spec.agentId);
      f.agents.add(spec.agentId);
      return { ...sandbox(spec.agentId), ...(found ? { found } : {}) };
    },
    async find(agentId: string) {
      await up();
      return f.agents.has(agentId) ? sandbox(agentId) : undefined;
    },
    async open(agentId: string) {
      await up();
      if (!f.agents.has(agentId)) throw new SandboxError('SANDBOX_UNAVAILABLE', 'never placed here');
      return { name } as unknown as SandboxdChannel;
    },
    async state(agentId: string) {
      await up();
      return f.agents.has(agentId) ? 'running' : 'absent';
    },
    stop: up,
    async pause() {
      await up();
      return 'stop';
    },
    async destroy(agentId: string) {
      await up();
      f.agents.delete(agentId);
    },
    async snapshot(agentId: string, id: string) {
      await up();
      if (!f.agents.has(agentId)) throw new SandboxError('SANDBOX_UNAVAILABLE', 'never placed here');
      f.snaps.add(id);
      return { sizeBytes: GIB, bytes: 4096 };
    },
    async dropSnapshot(id: string) {
      await up();
      f.snaps.delete(id);
    },
    usage: async () => undefined,
    async adopt() {
      await up();
      return [...f.agents];
    },
    async capacity() {
      f.capacityAsked++;
      await up();
      return {
        node: name,
        cpus: 4,
        memoryBytes: 8 * GIB,
        sandboxes: f.agents.size,
        running: f.agents.size,
        pool: { ready: 0, size: 0 },
        runtimes: ['runc'],
        ...f.cap,
      };
    },
    close: async () => {},
  });
  return f;
}

/** Has placement find every agent the fakes hold (it records what a node's adopt names no more). */
const findAll = async (p: { find(agentId: string): Promise<unknown> }, ...nodes: Fake[]): Promise<void> => {
  for (const n of nodes) for (const agentId of n.agents) await p.find(agentId);
};

const spec = (agentId: string, extra: object = {}) => ({
  agentId,
  tenantId: 't',
  limits: DOCKER_DEFAULT_LIMITS,
  ...extra,
});

describe('placement', () => {
  it('places a new agent on the freest of the sampled nodes, and routes its calls there', async () => {
    const small = fake('small', { cpus: 1, memoryBytes: 2 * GIB });
    const big = fake('big', { cpus: 16, memoryBytes: 64 * GIB });
    const p = createPlacement([small, big]);
    await p.ensure(spec('a1'));
    expect(big.agents.has('a1')).toBe(true);
    expect(p.nodeOf('a1')).toBe('big');
    expect(await p.open('a1')).toEqual({ name: 'big' });
    expect(await p.state('a1')).toBe('running');
    await p.destroy('a1');
    expect(big.agents.size).toBe(0);
    expect(await p.state('a1')).toBe('absent');
  });

  it('a node that refuses a new agent for capacity is passed over for the next; all full: its refusal', async () => {
    const full = fake('full', { cpus: 64, memoryBytes: 256 * GIB });
    const other = fake('other');
    const refuse = (node: Fake) => {
      node.ensure = async () => {
        throw new SandboxError('CAPACITY_EXCEEDED', `The workspaces of ${node.name} are full.`);
      };
    };
    refuse(full);
    const p = createPlacement([full, other], { capacityTtlMs: 60_000 });
    await p.ensure(spec('a1'));
    expect(other.agents.has('a1')).toBe(true);
    expect(p.nodeOf('a1')).toBe('other');
    refuse(other);
    await expect(p.ensure(spec('a2'))).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED' });
    // Another failure is not a reason to try elsewhere.
    const broken = fake('broken', { cpus: 64, memoryBytes: 256 * GIB });
    const spare = fake('spare');
    broken.ensure = async () => {
      throw new SandboxError('SANDBOX_UNAVAILABLE', 'the engine stopped');
    };
    const q = createPlacement([broken, spare]);
    await expect(q.ensure(spec('b1'))).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
    expect(spare.agents.size).toBe(0);
  });

  it('spreads a burst over equal nodes within one capacity reading', async () => {
    const a = fake('a');
    const b = fake('b');
    const p = createPlacement([a, b], { capacityTtlMs: 60_000 });
    for (let i = 0; i < 6; i++) await p.ensure(spec(`x${i}`));
    expect([a.agents.size, b.agents.size]).toEqual([3, 3]);
  });

  it('samples at most K nodes per placement', async () => {
    const nodes = ['a', 'b', 'c', 'd', 'e'].map((n) => fake(n));
    const p = createPlacement(nodes, { sample: 2, capacityTtlMs: 0 });
    await p.ensure(spec('one'));
    expect(nodes.reduce((s, n) => s + n.capacityAsked, 0)).toBe(2);
  });

  it('finds an agent already on a node (after a restart) instead of placing it again', async () => {
    const a = fake('a', { cpus: 64, memoryBytes: 256 * GIB });
    const b = fake('b');
    b.agents.add('old');
    const p = createPlacement([a, b]);
    const placed = await p.ensure(spec('old'));
    expect(placed.found).toBe(true);
    expect(a.agents.has('old')).toBe(false);
    expect(p.nodeOf('old')).toBe('b');
  });

  it('puts an isolated child beside its parent, unless the parent’s node is cordoned', async () => {
    const a = fake('a');
    const b = fake('b', { cpus: 64, memoryBytes: 256 * GIB });
    a.agents.add('parent');
    const p = createPlacement([a, b]);
    await p.ensure(spec('child', { near: 'parent' }));
    expect(a.agents.has('child')).toBe(true);
    await p.cordon('a', true);
    await p.ensure(spec('child2', { near: 'parent' }));
    expect(b.agents.has('child2')).toBe(true);
  });

  it('gives a cordoned node no new agents while its agents keep working; uncordoned, it takes them again', async () => {
    const a = fake('a', { cpus: 64, memoryBytes: 256 * GIB });
    const b = fake('b');
    a.agents.add('staying');
    const p = createPlacement([a, b], { cordoned: ['a'], capacityTtlMs: 0 });
    for (let i = 0; i < 4; i++) await p.ensure(spec(`n${i}`));
    expect(b.agents.size).toBe(4);
    expect(await p.open('staying')).toEqual({ name: 'a' });
    expect((await p.nodes()).map((n) => [n.name, n.cordoned])).toEqual([
      ['a', true],
      ['b', false],
    ]);
    await p.cordon('a', false);
    await p.ensure(spec('back'));
    expect(a.agents.has('back')).toBe(true);
    await expect(p.cordon('nope', true)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('refuses a new agent when every node is cordoned, and a cordon of an unknown node at start', async () => {
    const p = createPlacement([fake('a')], { cordoned: ['a'] });
    await expect(p.ensure(spec('z'))).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
    expect(() => createPlacement([fake('a')], { cordoned: ['b'] })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
  });

  it('passes over a node without the runtime asked for', async () => {
    const plain = fake('plain', { cpus: 64, memoryBytes: 256 * GIB });
    const gv = fake('gv', { runtimes: ['runc', 'gvisor'] });
    const p = createPlacement([plain, gv]);
    await p.ensure(spec('g', { runtime: 'gvisor' }));
    expect(gv.agents.has('g')).toBe(true);
  });

  it('fails only a silent node’s agents, at once and naming it; the others carry on and new agents go elsewhere', async () => {
    const a = fake('a');
    const b = fake('b');
    a.agents.add('on-a');
    b.agents.add('on-b');
    const p = createPlacement([a, b], { capacityTtlMs: 0 });
    await findAll(p, a, b);
    a.down = true;
    await expect(p.open('on-a')).rejects.toMatchObject({
      code: 'NODE_UNREACHABLE',
      message: /Node a/,
      data: { node: 'a' },
    });
    await expect(p.state('on-a')).rejects.toMatchObject({ code: 'NODE_UNREACHABLE' });
    expect(await p.open('on-b')).toEqual({ name: 'b' });
    await p.ensure(spec('fresh'));
    expect(b.agents.has('fresh')).toBe(true);
    // An agent this process never saw, maybe on the silent node: its calls fail naming that node.
    await expect(p.open('unknown')).rejects.toMatchObject({ code: 'NODE_UNREACHABLE', message: /Node a/ });
  });

  it('names the node when a call’s session ends because the node went, and not when only the sandbox died', async () => {
    const a = fake('a');
    const b = fake('b');
    a.agents.add('on-a');
    b.agents.add('on-b');
    const p = createPlacement([a, b], { capacityTtlMs: 0, probeMs: 60_000 });
    await findAll(p, a, b);
    await p.open('on-a');
    await p.open('on-b');
    const ended = new SandboxError('SANDBOX_UNAVAILABLE', 'The sandboxd connection was closed.');
    // b answers its probe: the sandbox died on a live node, the error stands.
    expect(await p.lost?.('on-b', ended)).toBe(ended);
    // a went with the session: the call reads as the calls after it will.
    a.down = true;
    expect(await p.lost?.('on-a', ended)).toMatchObject({
      code: 'NODE_UNREACHABLE',
      message: /Node a/,
      data: { node: 'a' },
      cause: ended,
    });
    await expect(p.open('on-a')).rejects.toMatchObject({ code: 'NODE_UNREACHABLE' });
    // Another failure of a call is the call's own, whatever the node's state.
    const timeout = new SandboxError('TOOL_TIMEOUT', 'too long');
    expect(await p.lost?.('on-a', timeout)).toBe(timeout);
    await p.close();
  });

  it('does not let a probe that began before a call failed answer for it', async () => {
    const a = fake('a');
    a.agents.add('on-a');
    const p = createPlacement([a], { capacityTtlMs: 0, probeMs: 60_000 });
    await findAll(p, a);
    await p.open('on-a');
    const ended = new SandboxError('SANDBOX_UNAVAILABLE', 'session ended');
    // A probe under way, whose answer comes from before the node went.
    let answer = (): void => {};
    const direct = a.capacity.bind(a);
    a.capacity = async () => {
      const c = await direct();
      await new Promise<void>((resolve) => {
        answer = resolve;
      });
      return c;
    };
    const asked = a.capacityAsked;
    const first = p.lost?.('on-a', ended);
    await until(() => a.capacityAsked > asked, { what: 'the first probe to ask' });
    a.capacity = direct;
    a.down = true;
    const second = p.lost?.('on-a', ended);
    answer();
    expect(await first).toBe(ended);
    expect(await second).toMatchObject({ code: 'NODE_UNREACHABLE', data: { node: 'a' } });
    await p.close();
  });

  it('does not wait on a node that never answers its capacity', async () => {
    const hung = fake('hung', { cpus: 64, memoryBytes: 256 * GIB });
    hung.capacity = () => new Promise<never>(() => {});
    hung.find = () => new Promise<never>(() => {});
    const ok = fake('ok');
    const p = createPlacement([hung, ok], { answerMs: 50 });
    await p.ensure(spec('q'));
    expect(ok.agents.has('q')).toBe(true);
  });

  it('never picks a node by a hostile capacity answer', async () => {
    const honest = fake('honest');
    const liars = [
      fake('negative', { sandboxes: -100 }),
      fake('nan', { cpus: Number.NaN }),
      fake('infinite', { memoryBytes: Number.POSITIVE_INFINITY }),
      fake('string', { cpus: '999' }),
      fake('missing', { pool: undefined }),
      fake('disk', { diskFreeBytes: -1 }),
      fake('runtimes', { runtimes: 'runc' }),
    ];
    const p = createPlacement([honest, ...liars], { sample: 8 });
    for (let i = 0; i < 3; i++) await p.ensure(spec(`h${i}`));
    expect(honest.agents.size).toBe(3);
    expect(saneCapacity(null as unknown as NodeCapacity)).toBeUndefined();
  });

  it('sends an agent back to the node the store records, after a restart too, never elsewhere while that node is down', async () => {
    const temp = tempDatabase();
    try {
      const store = createNodeStore(temp.connect());
      const a = fake('a');
      const b = fake('b', { cpus: 64, memoryBytes: 256 * GIB });
      const first = createPlacement([a, b], { store });
      await first.ensure(spec('kept'));
      expect(b.agents.has('kept')).toBe(true);
      expect(await store.nodeOf('kept')).toBe('b');
      // A restart with b down: the agent is not placed on a (its files are on b).
      const bigA = fake('a', { cpus: 64 * 64, memoryBytes: 1024 * GIB });
      b.down = true;
      const again = createPlacement([bigA, b], { store: createNodeStore(temp.connect()) });
      await expect(again.find('kept')).rejects.toMatchObject({
        code: 'NODE_UNREACHABLE',
        data: { node: 'b' },
      });
      await expect(again.ensure(spec('kept'))).rejects.toMatchObject({ code: 'NODE_UNREACHABLE' });
      expect(bigA.agents.has('kept')).toBe(false);
      // b back but its container gone: made again on b (its workspace), not on the freer a.
      b.down = false;
      b.agents.clear();
      await again.ensure(spec('kept'));
      expect([bigA.agents.has('kept'), b.agents.has('kept')]).toEqual([false, true]);
      expect((await again.nodes()).map((n) => [n.name, n.agents])).toEqual([
        ['a', 0],
        ['b', 1],
      ]);
      await again.destroy('kept');
      expect(await store.nodeOf('kept')).toBeUndefined();
    } finally {
      temp.cleanup();
    }
  });

  it("never takes another node's agent on a node's word (adopt): the store's record stands, after a restart too", async () => {
    const temp = tempDatabase();
    try {
      const store = createNodeStore(temp.connect());
      const a = fake('a', { cpus: 64, memoryBytes: 256 * GIB });
      const hostile = fake('h');
      // A node that claims every agent it hears of, to be sent their calls (and their secrets).
      // It answers last, so that its word is the last one heard.
      hostile.adopt = async () => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        return ['victim', 'unrecorded'];
      };
      const errors: unknown[] = [];
      const p = createPlacement([hostile, a], { store, onError: (e) => errors.push(e) });
      await p.ensure(spec('victim'));
      expect(await store.nodeOf('victim')).toBe('a');
      await p.adopt();
      expect(p.nodeOf('victim')).toBe('a');
      expect(await store.nodeOf('victim')).toBe('a');
      expect(await p.open('victim')).toEqual({ name: 'a' });
      // A node's adopt names are its word only: nothing is looked up or recorded by them.
      expect(errors).toEqual([]);
      // A control plane started again on the same store: the hostile node's adopt comes first.
      const again = createPlacement([hostile, a], { store: createNodeStore(temp.connect()) });
      await again.adopt();
      expect(await again.open('victim')).toEqual({ name: 'a' });
      expect(await store.nodeOf('victim')).toBe('a');
      // An agent no node was recorded for is not recorded on a node's adopt either (its find is checked: claimOf).
      expect(await store.nodeOf('unrecorded')).toBeUndefined();
    } finally {
      temp.cleanup();
    }
  });

  it("places an agent's first sandbox by placement alone: a node that says it holds every agent (find) gets none, cordoned or not", async () => {
    const a = fake('a');
    const liar = fake('h', { cpus: 1, memoryBytes: GIB });
    // It answers find for any agent, to be handed every new one (and to outlast its cordon).
    liar.find = async (agentId: string) => ({
      id: `h:${agentId}`,
      limits: DOCKER_DEFAULT_LIMITS,
      tenantId: 't',
    });
    const p = createPlacement([liar, a], { cordoned: ['h'], capacityTtlMs: 0 });
    await p.ensure(spec('first', { fresh: true }));
    expect(p.nodeOf('first')).toBe('a');
    expect(liar.agents.has('first')).toBe(false);
    // An agent that had a sandbox before and no record (a restart without a store) is still found.
    liar.agents.add('old');
    const again = createPlacement([liar, a], { cordoned: ['h'] });
    expect((await again.ensure(spec('old'))).found).toBe(true);
    expect(again.nodeOf('old')).toBe('h');
  });

  it('finds a silent node by its probe: its agents read unreachable and fail without a call to it; it comes back', async () => {
    const a = fake('a');
    const b = fake('b');
    a.agents.add('on-a');
    b.agents.add('on-b');
    const health: string[] = [];
    const p = createPlacement([a, b], {
      probeMs: 5,
      onHealth: (name, reachable) => health.push(`${name}:${reachable}`),
    });
    try {
      await findAll(p, a, b);
      b.down = true;
      await until(() => p.unreachable?.('on-b') === 'b', { what: 'the probe to find b silent' });
      const opened = vi.spyOn(b, 'open');
      await expect(p.open('on-b')).rejects.toMatchObject({ code: 'NODE_UNREACHABLE', data: { node: 'b' } });
      expect(opened).not.toHaveBeenCalled();
      const down = (await p.nodes()).find((n) => n.name === 'b');
      expect(down).toMatchObject({ reachable: false, agents: 1 });
      expect(down?.unreachableSince).toBeTypeOf('number');
      // New agents go to a; a's agents carry on.
      await p.ensure(spec('fresh'));
      expect(a.agents.has('fresh')).toBe(true);
      expect(await p.open('on-a')).toEqual({ name: 'a' });
      b.down = false;
      await until(() => p.unreachable?.('on-b') === undefined, { what: 'the probe to find b back' });
      expect(await p.open('on-b')).toEqual({ name: 'b' });
      expect(health).toEqual(['b:false', 'b:true']);
    } finally {
      await p.close();
    }
  });

  it('honours cordons set through the store (another replica, the admin command), and keeps its own there', async () => {
    const temp = tempDatabase();
    try {
      const store = createNodeStore(temp.connect());
      const a = fake('a', { cpus: 64, memoryBytes: 256 * GIB });
      const b = fake('b');
      const p = createPlacement([a, b], { store, capacityTtlMs: 0 });
      await createNodeStore(temp.connect()).setCordon('a', true);
      await p.ensure(spec('one'));
      expect(b.agents.has('one')).toBe(true);
      expect((await p.nodes()).map((n) => [n.name, n.cordoned])).toEqual([
        ['a', true],
        ['b', false],
      ]);
      await p.cordon('a', false);
      await p.cordon('b', true);
      expect(await store.cordoned()).toEqual(['b']);
      await p.ensure(spec('two'));
      expect(a.agents.has('two')).toBe(true);
    } finally {
      temp.cleanup();
    }
  });
});

describe('placement of snapshots', () => {
  it('takes a snapshot on the agent’s node, names it, makes an agent from it there however free the others are, and drops it there', async () => {
    const a = fake('a');
    const b = fake('b', { cpus: 64, memoryBytes: 256 * GIB });
    a.agents.add('src');
    const p = createPlacement([a, b]);
    expect(await p.snapshot?.('src', 'snap_1')).toEqual({ sizeBytes: GIB, bytes: 4096, node: 'a' });
    expect([a.snaps.has('snap_1'), b.snaps.has('snap_1')]).toEqual([true, false]);
    await p.ensure(spec('copy', { fromSnapshot: 'snap_1', snapshotNode: 'a' }));
    expect([a.agents.has('copy'), b.agents.has('copy')]).toEqual([true, false]);
    expect(p.nodeOf('copy')).toBe('a');
    // Without the node named, the one this process saw take it.
    await p.ensure(spec('copy2', { fromSnapshot: 'snap_1' }));
    expect(a.agents.has('copy2')).toBe(true);
    const dropped = vi.spyOn(b, 'dropSnapshot');
    await p.dropSnapshot?.('snap_1', 'a');
    expect(a.snaps.size).toBe(0);
    expect(dropped).not.toHaveBeenCalled();
    // Gone already: done.
    await p.dropSnapshot?.('snap_1', 'a');
  });

  it('finds a snapshot’s node by its record after a restart (not by memory), and never places the agent elsewhere', async () => {
    const a = fake('a');
    const b = fake('b', { cpus: 64, memoryBytes: 256 * GIB });
    b.snaps.add('snap_old');
    const p = createPlacement([a, b]);
    await expect(p.ensure(spec('x', { fromSnapshot: 'snap_old' }))).rejects.toMatchObject({
      code: 'NOT_FOUND',
      data: { snapshotId: 'snap_old' },
    });
    expect(a.agents.size + b.agents.size).toBe(0);
    await expect(p.dropSnapshot?.('snap_old')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const small = fake('small');
    small.snaps.add('snap_small');
    const q = createPlacement([small, b]);
    await q.ensure(spec('y', { fromSnapshot: 'snap_small', snapshotNode: 'small' }));
    expect([small.agents.has('y'), b.agents.has('y')]).toEqual([true, false]);
    await q.dropSnapshot?.('snap_small', 'small');
    expect(small.snaps.size).toBe(0);
  });

  it('refuses an agent from a snapshot whose node is cordoned, silent or not among its nodes, naming the node, and places nothing', async () => {
    const a = fake('a');
    const b = fake('b');
    a.snaps.add('snap_a');
    a.agents.add('on-a');
    const p = createPlacement([a, b], { cordoned: ['a'], probeMs: 5 });
    try {
      await findAll(p, a, b);
      await expect(p.ensure(spec('c1', { fromSnapshot: 'snap_a', snapshotNode: 'a' }))).rejects.toMatchObject(
        {
          code: 'NODE_CORDONED',
          message: /node a/,
          data: { node: 'a', snapshotId: 'snap_a' },
        },
      );
      await p.cordon('a', false);
      a.down = true;
      await until(() => p.unreachable?.('on-a') === 'a', { what: 'the probe to find a silent' });
      const ensured = vi.spyOn(a, 'ensure');
      await expect(p.ensure(spec('c2', { fromSnapshot: 'snap_a', snapshotNode: 'a' }))).rejects.toMatchObject(
        {
          code: 'NODE_UNREACHABLE',
          data: { node: 'a', snapshotId: 'snap_a' },
        },
      );
      expect(ensured).not.toHaveBeenCalled();
      await expect(p.snapshot?.('on-a', 'snap_z')).rejects.toMatchObject({ code: 'NODE_UNREACHABLE' });
      await expect(
        p.ensure(spec('c3', { fromSnapshot: 'snap_a', snapshotNode: 'gone' })),
      ).rejects.toMatchObject({
        code: 'NODE_UNREACHABLE',
        data: { node: 'gone' },
      });
      await expect(p.dropSnapshot?.('snap_a', 'gone')).rejects.toMatchObject({ code: 'NODE_UNREACHABLE' });
      expect(b.agents.size).toBe(0);
      // Back: the agent is made there from it.
      a.down = false;
      await until(() => p.unreachable?.('on-a') === undefined, { what: 'the probe to find a back' });
      await p.ensure(spec('c4', { fromSnapshot: 'snap_a', snapshotNode: 'a' }));
      expect(a.agents.has('c4')).toBe(true);
    } finally {
      await p.close();
    }
  });

  it('answers SNAPSHOT_UNSUPPORTED from a node that keeps no snapshots', async () => {
    const plain = fake('plain');
    plain.agents.add('p1');
    plain.snapshot = undefined;
    plain.dropSnapshot = undefined;
    const p = createPlacement([plain, fake('other')]);
    await expect(p.snapshot?.('p1', 'snap_p')).rejects.toMatchObject({
      code: 'SNAPSHOT_UNSUPPORTED',
      data: { node: 'plain' },
    });
    await expect(p.dropSnapshot?.('snap_p', 'plain')).rejects.toMatchObject({ code: 'SNAPSHOT_UNSUPPORTED' });
  });

  it('gives the provider each snapshot’s own node, and deletes it there; a single node keeps refusing another node’s', async () => {
    const a = fake('a');
    const b = fake('b');
    b.agents.add('src');
    const provider = createDockerProvider({
      image: 'unused',
      instance: 'test',
      idleMs: 0,
      node: createPlacement([a, b]),
    });
    const one = createDockerProvider({ image: 'unused', instance: 'test', idleMs: 0, node: b });
    try {
      expect(await provider.snapshot?.('src', 'snap_p')).toEqual({ node: 'b', sizeBytes: GIB, bytes: 4096 });
      await provider.dropSnapshot?.('snap_p', 'b');
      expect(b.snaps.size).toBe(0);
      expect(await one.snapshot?.('src', 'snap_q')).toEqual({ node: 'b', sizeBytes: GIB, bytes: 4096 });
      await expect(one.dropSnapshot?.('snap_q', 'a')).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE' });
      expect(b.snaps.has('snap_q')).toBe(true);
    } finally {
      await provider.close();
      await one.close();
    }
  });
});
