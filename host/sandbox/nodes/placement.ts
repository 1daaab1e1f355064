// Placement among several nodes (docs/nodes.md, "Placement"): one SandboxNode over many, so the
// provider above it is the same as over one node. An agent already on a node is routed there (the
// answer of each node's `find` or `adopt` is remembered in memory); a new agent goes beside its
// family (spec.near: the agent whose workspace it starts from) when that node takes new agents,
// else to the best of up to K sampled nodes by free capacity (E2B's best-of-K; capacities cached a
// few seconds, each placement counted into the cache so a burst spreads), skipping cordoned nodes
// and nodes without the runtime asked for.
// Invariants: a node's capacity answer is used only when every figure is a finite, non-negative
// number (a hostile or broken node is not picked by a lie); a node that does not answer fails only
// its own agents' calls (SANDBOX_UNAVAILABLE naming it, from the remote client), within
// `answerMs` for the questions placement asks itself (capacity, find); agents on other nodes carry
// on. `find` and `ensure` pass over a node that does not answer (a new agent is placed elsewhere);
// every other call on an agent this process cannot place on a node fails with SANDBOX_UNAVAILABLE.

import { SandboxError } from '../../errors.ts';
import { DEFAULT_RUNTIME } from '../runtimes.ts';
import type { SandboxLimits } from '../types.ts';
import type { NodeCapacity, NodeSandbox, NodeSandboxSpec, SandboxNode } from './types.ts';

export interface PlacementOptions {
  /** Nodes that take no new agents (their agents keep working). Changed at run time by cordon(). */
  cordoned?: Iterable<string>;
  /** Candidates sampled per placement. Default 3. */
  sample?: number;
  /** How long a node's capacity answer is used. Default 3000 ms. */
  capacityTtlMs?: number;
  /** How long placement waits for a node's capacity or find. Default 5000 ms. */
  answerMs?: number;
  /** [0, 1) (tests pass their own). Default Math.random. */
  random?: () => number;
  onError?: (error: unknown) => void;
}

/** What GET /v1/nodes and the admin say about a node. */
export interface NodeStatus {
  name: string;
  cordoned: boolean;
  /** Its capacity as last read (undefined: it did not answer, or answered nonsense). */
  capacity?: NodeCapacity;
}

export interface PlacedNodes extends SandboxNode<never> {
  /** The node the agent's sandbox is on, when this process knows. */
  nodeOf(agentId: string): string | undefined;
  /** Marks a node as taking (false) or not taking (true) new agents. NOT_FOUND for an unknown name. */
  cordon(name: string, cordoned: boolean): void;
  nodes(): Promise<NodeStatus[]>;
}

interface Cached {
  at: number;
  capacity: NodeCapacity | undefined;
}

/** What placement keeps: its nodes, the cordons, where each known agent is, capacities read. */
interface State {
  members: SandboxNode<never>[];
  byName: Map<string, SandboxNode<never>>;
  cordoned: Set<string>;
  sample: number;
  ttl: number;
  answerMs: number;
  random: () => number;
  onError: (error: unknown) => void;
  /** Agent id → node name: where its sandbox is (find, adopt, ensure). */
  where: Map<string, string>;
  cache: Map<string, Cached>;
}

export function createPlacement(members: SandboxNode<never>[], options: PlacementOptions = {}): PlacedNodes {
  if (members.length === 0) throw new SandboxError('CONFIG_INVALID', 'Placement needs at least one node.');
  const s: State = {
    members,
    byName: new Map(members.map((n) => [n.name, n])),
    cordoned: new Set(options.cordoned ?? []),
    sample: Math.max(1, options.sample ?? 3),
    ttl: options.capacityTtlMs ?? 3000,
    answerMs: options.answerMs ?? 5000,
    random: options.random ?? Math.random,
    onError: options.onError ?? (() => {}),
    where: new Map(),
    cache: new Map(),
  };
  for (const name of s.cordoned)
    if (!s.byName.has(name))
      throw new SandboxError('CONFIG_INVALID', `No node is named "${name}" to cordon.`);
  const on = async <T>(agentId: string, none: T, fn: (n: SandboxNode<never>) => Promise<T>): Promise<T> => {
    const node = await route(s, agentId);
    return node === undefined ? none : fn(node);
  };
  const first = members[0] as SandboxNode<never>;
  return {
    name: 'placement',
    defaults: first.defaults,
    maxima: leastOf(members.map((n) => n.maxima)),
    pool: {
      get ready() {
        return members.reduce((sum, n) => sum + n.pool.ready, 0);
      },
      filled: async () => {
        await Promise.all(members.map((n) => n.pool.filled()));
      },
    },
    async ensure(spec) {
      const { node: at } = await locate(s, spec.agentId);
      const node = at ?? (await place(s, spec));
      const placed = await node.ensure(spec);
      if (s.where.get(spec.agentId) !== node.name) counted(s, node.name);
      s.where.set(spec.agentId, node.name);
      return placed;
    },
    find: async (agentId) => {
      const { node, found } = await locate(s, agentId);
      return found ?? (await node?.find(agentId));
    },
    async open(agentId, openOptions) {
      const node = await route(s, agentId);
      if (node === undefined)
        throw new SandboxError('SANDBOX_UNAVAILABLE', `Agent ${agentId} has no sandbox on any node.`);
      return node.open(agentId, openOptions);
    },
    state: (agentId) => on(agentId, 'absent' as const, (n) => n.state(agentId)),
    stop: (agentId) => on(agentId, undefined, (n) => n.stop(agentId)),
    pause: (agentId, mode) => on(agentId, 'none' as const, (n) => n.pause(agentId, mode)),
    usage: (agentId, usageOptions) => on(agentId, undefined, (n) => n.usage(agentId, usageOptions)),
    async destroy(agentId) {
      await on(agentId, undefined, (n) => n.destroy(agentId));
      s.where.delete(agentId);
    },
    adopt: (adoptOptions) => adoptAll(s, adoptOptions),
    capacity: async () =>
      sumOf((await Promise.all(members.map((n) => capacityOf(s, n)))).filter((c) => c !== undefined)),
    close: async () => {
      await Promise.all(members.map((n) => n.close()));
    },
    nodeOf: (agentId) => s.where.get(agentId),
    cordon(name, cordon) {
      if (!s.byName.has(name)) throw new SandboxError('NOT_FOUND', `No node is named "${name}".`);
      if (cordon) s.cordoned.add(name);
      else s.cordoned.delete(name);
    },
    nodes: () =>
      Promise.all(
        members.map(async (n) => {
          const capacity = await capacityOf(s, n);
          return {
            name: n.name,
            cordoned: s.cordoned.has(n.name),
            ...(capacity === undefined ? {} : { capacity }),
          };
        }),
      ),
  };
}

const answer = <T>(s: State, node: SandboxNode<never>, what: string, p: Promise<T>): Promise<T> =>
  withDeadline(p, s.answerMs, () => unavailable(node.name, `did not answer ${what} in ${s.answerMs} ms`));

/** The node's capacity, read at most once per TTL; undefined when it does not answer or answers nonsense. */
async function capacityOf(s: State, node: SandboxNode<never>): Promise<NodeCapacity | undefined> {
  const hit = s.cache.get(node.name);
  if (hit !== undefined && Date.now() - hit.at < s.ttl) return hit.capacity;
  const capacity = await answer(s, node, 'capacity', node.capacity()).then(saneCapacity, (e: unknown) => {
    s.onError(e);
    return undefined;
  });
  s.cache.set(node.name, { at: Date.now(), capacity });
  return capacity;
}

interface Located {
  node?: SandboxNode<never>;
  found?: NodeSandbox;
  /** Nodes that did not answer `find`. */
  silent: string[];
}

/** Where the agent is: memory, else every node's find. */
async function locate(s: State, agentId: string): Promise<Located> {
  const known = s.where.get(agentId);
  const node = known === undefined ? undefined : s.byName.get(known);
  if (node !== undefined) return { node, silent: [] };
  const silent: string[] = [];
  const answers = await Promise.all(
    s.members.map((n) =>
      answer(s, n, 'find', n.find(agentId)).then(
        (found) => ({ n, found }),
        (e: unknown) => {
          s.onError(e);
          silent.push(n.name);
          return { n, found: undefined };
        },
      ),
    ),
  );
  const hit = answers.find((a) => a.found !== undefined);
  if (hit === undefined) return { silent };
  s.where.set(agentId, hit.n.name);
  return { node: hit.n, ...(hit.found === undefined ? {} : { found: hit.found }), silent };
}

/** The agent's node for a call on it; SANDBOX_UNAVAILABLE naming the nodes that might have it and do not answer. */
async function route(s: State, agentId: string): Promise<SandboxNode<never> | undefined> {
  const { node, silent } = await locate(s, agentId);
  if (node === undefined && silent.length > 0)
    throw unavailable(silent.join(', '), `does not answer; agent ${agentId} may be there`);
  return node;
}

/** A new agent's node: its family's when that takes new agents, else the freest of K sampled. */
async function place(s: State, spec: NodeSandboxSpec): Promise<SandboxNode<never>> {
  const runtime = spec.runtime ?? DEFAULT_RUNTIME;
  const family = spec.near === undefined ? undefined : (await locate(s, spec.near)).node;
  if (family !== undefined && !s.cordoned.has(family.name)) return family;
  const open = shuffle(
    s.members.filter((n) => !s.cordoned.has(n.name)),
    s.random,
  ).slice(0, s.sample);
  const scored = await Promise.all(open.map(async (n) => ({ n, c: await capacityOf(s, n) })));
  let best: { n: SandboxNode<never>; score: number } | undefined;
  for (const { n, c } of scored) {
    if (c === undefined || !c.runtimes.includes(runtime)) continue;
    const score = freeOf(c);
    if (best === undefined || score > best.score) best = { n, score };
  }
  if (best === undefined)
    throw new SandboxError(
      'SANDBOX_UNAVAILABLE',
      `No node can take a new sandbox (${open.length === 0 ? 'every node is cordoned' : `asked ${open.map((n) => n.name).join(', ')}`}).`,
    );
  return best.n;
}

/** Counts a placement into the cached capacity, so the next placements within the TTL spread. */
function counted(s: State, name: string): void {
  const c = s.cache.get(name)?.capacity;
  if (c !== undefined) {
    c.sandboxes += 1;
    c.running += 1;
  }
}

/** Every node's adopt; the agents found are remembered on their node. A node that fails is passed over. */
async function adoptAll(s: State, options: Parameters<SandboxNode<never>['adopt']>[0]): Promise<string[]> {
  const names = await Promise.all(
    s.members.map((n) =>
      n.adopt(options).then(
        (found) => {
          for (const agentId of found) s.where.set(agentId, n.name);
          return found;
        },
        (e: unknown) => {
          s.onError(e);
          return [];
        },
      ),
    ),
  );
  return names.flat();
}

const unavailable = (node: string, what: string) =>
  new SandboxError('SANDBOX_UNAVAILABLE', `Node ${node} ${what}.`);

function withDeadline<T>(p: Promise<T>, ms: number, error: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(error()), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Fisher-Yates over a copy. */
function shuffle<T>(items: T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.min(i, Math.floor(random() * (i + 1)));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

const GIB = 1024 ** 3;

/**
 * Free capacity as one figure: the share of the node's scarcer resource (CPUs, or memory in GiB)
 * each of its sandboxes would have with one more, so a big idle node beats a small or busy one.
 */
export const freeOf = (c: NodeCapacity): number => Math.min(c.cpus, c.memoryBytes / GIB) / (c.sandboxes + 1);

const count = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** A node's capacity when every figure placement reads is sane; undefined otherwise. */
export function saneCapacity(c: NodeCapacity): NodeCapacity | undefined {
  if (typeof c !== 'object' || c === null) return undefined;
  const figures = [c.cpus, c.memoryBytes, c.sandboxes, c.running, c.pool?.ready, c.pool?.size];
  if (!figures.every(count) || !Array.isArray(c.runtimes)) return undefined;
  if (c.diskFreeBytes !== undefined && !count(c.diskFreeBytes)) return undefined;
  return { ...c, pool: { ...c.pool }, runtimes: [...c.runtimes] };
}

/** The most every node allows. */
function leastOf(all: SandboxLimits[]): SandboxLimits {
  const [head, ...rest] = all as [SandboxLimits, ...SandboxLimits[]];
  const out: SandboxLimits = { ...head };
  for (const m of rest) {
    out.memoryBytes = Math.min(out.memoryBytes, m.memoryBytes);
    out.nanoCpus = Math.min(out.nanoCpus, m.nanoCpus);
    out.pids = Math.min(out.pids, m.pids);
    out.maxReadBytes = Math.min(out.maxReadBytes, m.maxReadBytes);
    out.maxOutputBytes = Math.min(out.maxOutputBytes, m.maxOutputBytes);
    if (out.diskBytes !== undefined || m.diskBytes !== undefined)
      out.diskBytes = Math.min(out.diskBytes ?? Infinity, m.diskBytes ?? Infinity);
  }
  return out;
}

/** Every node's capacity together (health and the provider's runtimes read it). */
function sumOf(all: NodeCapacity[]): NodeCapacity {
  const runtimes = [...new Set(all.flatMap((c) => c.runtimes))];
  return {
    node: 'placement',
    cpus: all.reduce((s, c) => s + c.cpus, 0),
    memoryBytes: all.reduce((s, c) => s + c.memoryBytes, 0),
    sandboxes: all.reduce((s, c) => s + c.sandboxes, 0),
    running: all.reduce((s, c) => s + c.running, 0),
    pool: {
      ready: all.reduce((s, c) => s + c.pool.ready, 0),
      size: all.reduce((s, c) => s + c.pool.size, 0),
    },
    runtimes: runtimes.length === 0 ? [DEFAULT_RUNTIME] : runtimes,
  };
}
