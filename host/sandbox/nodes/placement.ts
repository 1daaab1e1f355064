// Placement among several nodes (docs/nodes.md, "Placement"): one SandboxNode over many, so the
// provider above it is the same as over one node. An agent already on a node is routed there (its
// node as the store records it, else the one node whose `find` answer matches the store's record
// of the agent, remembered in memory and recorded in the store); a new agent goes beside its
// family (spec.near: the agent whose workspace it starts from) when that node takes new agents, else to the best of up to K
// sampled nodes by free capacity (E2B's best-of-K; capacities cached a few seconds, each placement
// counted into the cache so a burst spreads), skipping cordoned and unreachable nodes and nodes
// without the runtime asked for, and spread per tenant: a node's free capacity is divided by one
// more than the tenant's live agents there (the store's count, which every replica shares; else
// this process's), so one tenant's agents are not heaped on one machine (what one machine's loss
// or one noisy tenant costs stays spread) unless the others are that much fuller. A node that
// refuses the new agent CAPACITY_EXCEEDED (its disk: capacity answers count sandboxes, not bytes)
// is passed over for the next pick (ensureFresh). Which nodes answer is ./health.ts's.
// Invariants: an agent the store places on a node is only ever sent there (never placed again
// elsewhere while that node is down or its container is gone: its files are there); a node that
// does not answer fails only its own agents' calls, with NODE_UNREACHABLE naming it (at once, with
// no call to it, once it is marked unreachable), and gets no new agents; agents on other nodes
// carry on; the questions placement asks itself (capacity, find) give up after `answerMs`; a node's
// capacity answer is used only when every figure is a finite, non-negative number, taken whole
// within bounds, and its free share counts no more than one sandbox may use (a hostile or broken
// node is not picked by a lie: saneCapacity, shareCap over every node's least maxima, and at least
// the agents this process placed there); a node's word that it holds an agent with no record counts
// only when it names the sandbox id the store records for the agent and no other node's does
// (claimOf: else NODE_CONFLICT, and the agent is sent to none; with no sandbox id recorded no claim
// counts and the agent is not found), and what its adopt names records nothing; an agent with no
// record, while some node is silent, is placed afresh by `ensure` but fails every other call with
// NODE_UNREACHABLE naming the silent nodes (it may be there).
// Snapshots: one is taken on its agent's node and named by it (the snapshot row's `node`); it is
// deleted on that node, and an agent made from it is placed on that node and nowhere else (its
// file is there), refused with NODE_CORDONED or NODE_UNREACHABLE naming the node while that node
// takes no new agents or does not answer. Where the caller does not name the snapshot's node,
// the one this process saw take it is used; a snapshot no node is known to hold is NOT_FOUND.

import { SandboxError } from '../../errors.ts';
import { IDLE_POLL_STATES } from '../../idle-poll.ts';
import type { NodeStore } from '../../store/nodes.ts';
import { DEFAULT_RUNTIME } from '../runtimes.ts';
import type { SandboxLimits } from '../types.ts';
import { createNodeHealth, type NodeHealth } from './health.ts';
import { snapshotsOf } from './snapshots-of.ts';
import type { NodeCapacity, NodeSandbox, NodeSandboxSpec, SandboxNode, WarmHooks } from './types.ts';

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
  /** Where each agent is and the runtime cordons, kept across restarts (the store's). Default: memory only. */
  store?: NodeStore;
  /** Probe every node's capacity this often, to find silent ones (./health.ts); 0: only after failed calls. Default 0. */
  probeMs?: number;
  /** Told when a node stops or starts answering. */
  onHealth?: (name: string, reachable: boolean, error?: string) => void;
  /**
   * A live agent as the store knows it: a node's `find` answer for an agent with no recorded node
   * counts only when it matches (claimOf). Default: none (any answer counts, but two conflict).
   */
  agentOf?: (agentId: string) => Promise<AgentRecordOf | undefined>;
}

/** What the store says of an agent, to check a node's claim on it against. */
export interface AgentRecordOf {
  /** Its sandbox's id (the container id) as last recorded, when it had one. */
  sandboxId?: string;
}

/** What GET /v1/nodes and the admin say about a node. */
export interface NodeStatus {
  name: string;
  cordoned: boolean;
  reachable: boolean;
  /** While unreachable: since when (epoch ms), and what the failing probe or call said. */
  unreachableSince?: number;
  error?: string;
  /** Agents whose sandbox is on it (as recorded). */
  agents: number;
  /** Its capacity as last read (undefined: it did not answer, or answered nonsense). */
  capacity?: NodeCapacity;
}

export interface PlacedNodes extends SandboxNode<unknown> {
  /** The node the agent's sandbox is on, when this process knows. */
  nodeOf(agentId: string): string | undefined;
  /** Marks a node as taking (false) or not taking (true) new agents, in the store too. NOT_FOUND for an unknown name. */
  cordon(name: string, cordoned: boolean): Promise<void>;
  nodes(): Promise<NodeStatus[]>;
}

/** Whether a node is placement's (the provider's node when DSH_NODES is set). */
export const isPlacement = (node: SandboxNode<unknown>): node is PlacedNodes =>
  node.name === 'placement' && typeof (node as Partial<PlacedNodes>).cordon === 'function';

interface Cached {
  at: number;
  capacity: NodeCapacity | undefined;
}

/** What placement keeps: its nodes, the cordons, where each known agent is, capacities read. */
interface State {
  members: SandboxNode<unknown>[];
  byName: Map<string, SandboxNode<unknown>>;
  cordoned: Set<string>;
  sample: number;
  ttl: number;
  answerMs: number;
  random: () => number;
  onError: (error: unknown) => void;
  /** Agent id → node name: where its sandbox is (find, adopt, ensure). */
  where: Map<string, string>;
  cache: Map<string, Cached>;
  store: NodeStore | undefined;
  health: NodeHealth;
  /** Snapshot id → node name, for those taken in this process (the caller's record names it otherwise). */
  snapshots: Map<string, string>;
  /** Agent id → tenant id, for agents placed by this process (the tenant spread without a store). */
  tenants: Map<string, string>;
  agentOf: PlacementOptions['agentOf'];
  /** Every node's least maxima (what any sandbox placement makes may use at most) and its defaults. */
  limits: { defaults: SandboxLimits; maxima: SandboxLimits };
}

/** A node placement places on (a remote one keeps warm sessions: remote/warm.ts). */
type Member = SandboxNode<unknown>;

export function createPlacement(members: Member[], options: PlacementOptions = {}): PlacedNodes {
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
    store: options.store,
    health: undefined as unknown as NodeHealth,
    snapshots: new Map(),
    tenants: new Map(),
    agentOf: options.agentOf,
    limits: placementLimits(members),
  };
  s.health = createNodeHealth(members, {
    probeMs: options.probeMs ?? 0,
    answerMs: s.answerMs,
    onCapacity: (name, c) => void s.cache.set(name, { at: Date.now(), capacity: saneCapacity(c) }),
    onChange: (name, down) => options.onHealth?.(name, down === undefined, down?.error),
  });
  for (const name of s.cordoned)
    if (!s.byName.has(name))
      throw new SandboxError('CONFIG_INVALID', `No node is named "${name}" to cordon.`);
  const on = async <T>(agentId: string, none: T, fn: (n: SandboxNode<unknown>) => Promise<T>): Promise<T> => {
    const node = await route(s, agentId);
    return node === undefined ? none : guarded(s, node, fn);
  };
  return {
    name: 'placement',
    ...s.limits,
    pool: {
      get ready() {
        return members.reduce((sum, n) => sum + n.pool.ready, 0);
      },
      filled: async () => {
        await Promise.all(members.map((n) => n.pool.filled()));
      },
    },
    async ensure(spec) {
      const { node: at } = await locate(s, spec.agentId, spec.fresh !== true);
      const { node, placed } = await ensureAt(s, at, spec);
      if (s.where.get(spec.agentId) !== node.name) counted(s, node.name);
      s.tenants.set(spec.agentId, spec.tenantId);
      await remember(s, spec.agentId, node.name);
      return placed;
    },
    find: async (agentId) => {
      const { node, found } = await locate(s, agentId);
      if (found !== undefined || node === undefined) return found;
      return guarded(s, node, (n) => n.find(agentId));
    },
    async open(agentId, openOptions) {
      const node = await route(s, agentId);
      if (node === undefined)
        throw new SandboxError('SANDBOX_UNAVAILABLE', `Agent ${agentId} has no sandbox on any node.`);
      return guarded(s, node, (n) => n.open(agentId, openOptions));
    },
    state: (agentId) => on(agentId, 'absent' as const, (n) => n.state(agentId)),
    stop: (agentId) => on(agentId, undefined, (n) => n.stop(agentId)),
    pause: (agentId, mode) => on(agentId, 'none' as const, (n) => n.pause(agentId, mode)),
    usage: (agentId, usageOptions) => on(agentId, undefined, (n) => n.usage(agentId, usageOptions)),
    async destroy(agentId) {
      await on(agentId, undefined, (n) => n.destroy(agentId));
      s.where.delete(agentId);
      s.tenants.delete(agentId);
      await s.store?.forget(agentId);
    },
    async snapshot(agentId, id) {
      const node = await route(s, agentId);
      if (node === undefined)
        throw new SandboxError('SANDBOX_UNAVAILABLE', `Agent ${agentId} has no sandbox on any node.`);
      const taken = await guarded(s, node, (n) => snapshotsOf(n).snapshot(agentId, id));
      s.snapshots.set(id, node.name);
      return { ...taken, node: node.name };
    },
    async dropSnapshot(id, at) {
      const name = at ?? s.snapshots.get(id);
      if (name === undefined) throw snapshotNowhere(id);
      await guarded(s, memberOf(s, name, `Snapshot ${id}`), (n) => snapshotsOf(n).dropSnapshot(id));
      s.snapshots.delete(id);
    },
    adopt: (adoptOptions) => adoptAll(s, adoptOptions),
    sweepSnapshots: (recorded) => sweepAll(s, recorded),
    capacity: async () =>
      sumOf((await Promise.all(members.map((n) => capacityOf(s, n)))).filter((c) => c !== undefined)),
    warmWith: (hooks) => warmEach(members, hooks),
    close: async () => {
      s.health.close();
      await Promise.all(members.map((n) => n.close()));
    },
    async lost(agentId, error) {
      const name = s.where.get(agentId);
      const node = name === undefined ? undefined : s.byName.get(name);
      const ended = error instanceof SandboxError && error.code === 'SANDBOX_UNAVAILABLE';
      return node === undefined || !ended ? error : s.health.failed(node, error);
    },
    nodeOf: (agentId) => s.where.get(agentId),
    unreachable(agentId) {
      const name = s.where.get(agentId);
      return name !== undefined && s.health.down(name) !== undefined ? name : undefined;
    },
    async cordon(name, cordon) {
      if (!s.byName.has(name)) throw new SandboxError('NOT_FOUND', `No node is named "${name}".`);
      // With a store, it is the cordons' record (the admin command and other replicas write it
      // too); memory keeps the configuration's, which an uncordon here lifts as well.
      await s.store?.setCordon(name, cordon);
      if (!cordon) s.cordoned.delete(name);
      else if (s.store === undefined) s.cordoned.add(name);
    },
    nodes: () => statuses(s),
  };
}

/** Every node as GET /v1/nodes shows it. */
async function statuses(s: State): Promise<NodeStatus[]> {
  const cordoned = await cordonedNow(s);
  const counts = s.store === undefined ? undefined : await s.store.agentCounts();
  const held = (name: string): number =>
    counts?.get(name) ?? [...s.where.values()].filter((n) => n === name).length;
  return Promise.all(
    s.members.map(async (n) => {
      // A silent node is probed, not asked twice: its last reading stands.
      const capacity = s.health.down(n.name) === undefined ? await capacityOf(s, n) : undefined;
      const down = s.health.down(n.name);
      return {
        name: n.name,
        cordoned: cordoned.has(n.name),
        reachable: down === undefined,
        ...(down === undefined ? {} : { unreachableSince: down.since, error: down.error }),
        agents: held(n.name),
        ...(capacity === undefined ? {} : { capacity }),
      };
    }),
  );
}

/** The cordons now: the configuration's and this process's, and those the store keeps (set through any replica or the admin command). */
async function cordonedNow(s: State): Promise<Set<string>> {
  const stored = (await s.store?.cordoned()) ?? [];
  return new Set([...s.cordoned, ...stored.filter((name) => s.byName.has(name))]);
}

/** Each node keeps its own pooled sandboxes' sessions, with the provider's hooks. */
function warmEach(members: Member[], hooks: WarmHooks): void {
  for (const n of members) n.warmWith?.(hooks);
}

/** A call of an agent on its node: at once NODE_UNREACHABLE when the node is known silent; a failure that may be the node's probes it. */
async function guarded<T>(
  s: State,
  node: SandboxNode<unknown>,
  fn: (n: SandboxNode<unknown>) => Promise<T>,
): Promise<T> {
  s.health.check(node.name);
  try {
    return await fn(node);
  } catch (e) {
    throw await s.health.failed(node, e);
  }
}

/** Remembers the agent's node, in the store too when it changed. */
async function remember(s: State, agentId: string, name: string): Promise<void> {
  if (s.where.get(agentId) === name) return;
  s.where.set(agentId, name);
  await s.store?.place(agentId, name);
}

const answer = <T>(s: State, node: SandboxNode<unknown>, what: string, p: Promise<T>): Promise<T> =>
  withDeadline(p, s.answerMs, () => unavailable(node.name, `did not answer ${what} in ${s.answerMs} ms`));

/** The node's capacity, read at most once per TTL; undefined when it does not answer or answers nonsense. */
async function capacityOf(s: State, node: SandboxNode<unknown>): Promise<NodeCapacity | undefined> {
  const hit = s.cache.get(node.name);
  if (hit !== undefined && Date.now() - hit.at < s.ttl) return hit.capacity;
  if (s.health.down(node.name) !== undefined) return undefined;
  // A node's own code may throw as it is asked (an in-process one): that is its failure, not placement's.
  const asked = Promise.resolve().then(() => node.capacity());
  const capacity = await answer(s, node, 'capacity', asked).then(saneCapacity, (e: unknown) => {
    s.onError(e);
    return undefined;
  });
  s.cache.set(node.name, { at: Date.now(), capacity });
  return capacity;
}

interface Located {
  node?: SandboxNode<unknown>;
  found?: NodeSandbox;
  /** Nodes that did not answer `find`. */
  silent: string[];
}

/**
 * Where the agent is: memory, else the store, else (when `ask`) every node's find (a silent node's
 * answer is not waited for; claims: which answer counts). An agent's first sandbox does not ask
 * (NodeSandboxSpec.fresh).
 */
async function locate(s: State, agentId: string, ask = true): Promise<Located> {
  const known = s.where.get(agentId) ?? (await s.store?.nodeOf(agentId));
  if (known !== undefined) {
    const node = s.byName.get(known);
    if (node === undefined)
      throw new SandboxError(
        'NODE_UNREACHABLE',
        `Agent ${agentId}'s sandbox and files are on node ${known}, which is not among this control plane's nodes (DSH_NODES).`,
        { data: { node: known } },
      );
    s.where.set(agentId, known);
    return { node, silent: [] };
  }
  if (!ask) return { silent: [] };
  const silent = s.members.filter((n) => s.health.down(n.name) !== undefined).map((n) => n.name);
  const answers = await Promise.all(
    s.members
      .filter((n) => s.health.down(n.name) === undefined)
      .map((n) =>
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
  const hit = await claimOf(s, agentId, answers);
  if (hit === undefined) return { silent };
  await remember(s, agentId, hit.n.name);
  return { node: hit.n, found: hit.found, silent };
}

/**
 * Which node's `find` answer for an agent with no record counts, since any node may answer "mine"
 * for any agent id to be sent its calls (its files, commands, secrets). Only one that names the
 * sandbox id the store recorded for the agent (the container id, set when its sandbox was made),
 * which a node that was never given the agent does not know; a tenant id is no proof (a node
 * learns tenant ids from every sandbox placed on it). An agent with no sandbox id recorded has no
 * sandbox anywhere (its first is being made: `fresh`), so no claim on it counts, and none stops it:
 * each is reported (SANDBOX_PROTOCOL) and the agent is not found. With a sandbox id recorded, a
 * claim that does not name it is reported, and unless exactly one names it the agent is sent to
 * none: NODE_CONFLICT naming the claimants (rather than a fresh sandbox elsewhere, which would lose
 * its files if a claim was true). Without a store to ask (`agentOf` unset: tests, benches) a
 * claim counts as the node's word.
 */
async function claimOf(
  s: State,
  agentId: string,
  answers: Array<{ n: SandboxNode<unknown>; found: NodeSandbox | undefined }>,
): Promise<{ n: SandboxNode<unknown>; found: NodeSandbox } | undefined> {
  const claims = answers.flatMap(({ n, found }) => (found === undefined ? [] : [{ n, found }]));
  if (claims.length === 0) return undefined;
  const checked = s.agentOf !== undefined;
  const sandboxId = checked ? (await s.agentOf?.(agentId))?.sandboxId : undefined;
  const counted = checked ? claims.filter((c) => namesRecorded(s, agentId, sandboxId, c)) : claims;
  if (checked && sandboxId === undefined) return undefined;
  if (counted.length === 1) return counted[0];
  const nodes = (counted.length > 1 ? counted : claims).map(({ n }) => n.name);
  throw new SandboxError(
    'NODE_CONFLICT',
    counted.length > 1
      ? `Nodes ${nodes.join(', ')} each say they hold agent ${agentId}'s sandbox, and none is recorded as its node: it is sent to neither.`
      : `Node ${nodes.join(', ')} said it holds agent ${agentId}'s sandbox, which is not the one the store records: it is not sent there.`,
    { data: { nodes } },
  );
}

/** Whether a node's claim names the agent's recorded sandbox; one that does not is reported. */
function namesRecorded(
  s: State,
  agentId: string,
  sandboxId: string | undefined,
  { n, found }: { n: SandboxNode<unknown>; found: NodeSandbox },
): boolean {
  if (sandboxId !== undefined && found.id === sandboxId) return true;
  s.onError(
    new SandboxError(
      'SANDBOX_PROTOCOL',
      sandboxId === undefined
        ? `Node ${n.name} said it holds agent ${agentId}, which has no sandbox yet; not counted.`
        : `Node ${n.name} said it holds agent ${agentId}, with a sandbox that is not the one the store records; not counted.`,
      { data: { node: n.name } },
    ),
  );
  return false;
}

/** The agent's node for a call on it; NODE_UNREACHABLE naming the nodes that might have it and do not answer. */
async function route(s: State, agentId: string): Promise<SandboxNode<unknown> | undefined> {
  const { node, silent } = await locate(s, agentId);
  if (node === undefined && silent.length > 0)
    throw new SandboxError(
      'NODE_UNREACHABLE',
      `Node ${silent.join(', ')} does not answer; agent ${agentId} may be there.`,
      { data: { node: silent.join(',') } },
    );
  return node;
}

type Ensured = { node: SandboxNode<unknown>; placed: NodeSandbox };

const ensureOn = async (s: State, node: SandboxNode<unknown>, spec: NodeSandboxSpec): Promise<Ensured> => ({
  node,
  placed: await guarded(s, node, (n) => n.ensure(spec)),
});

/** The sandbox on the agent's node `at`, else its snapshot's, else a node picked for it. */
const ensureAt = async (
  s: State,
  at: SandboxNode<unknown> | undefined,
  spec: NodeSandboxSpec,
): Promise<Ensured> =>
  at !== undefined || spec.fromSnapshot !== undefined
    ? ensureOn(s, at ?? (await holder(s, spec)), spec)
    : ensureFresh(s, spec);

/**
 * A new agent's sandbox on the node place() picks; a node that answers CAPACITY_EXCEEDED (its disk,
 * or its tenants' shares of it, full: its capacity answer counts sandboxes, not bytes) is passed
 * over for this agent and its cached capacity forgotten, and the next pick is tried, until no node
 * is left to pick (then the last refusal stands).
 */
async function ensureFresh(s: State, spec: NodeSandboxSpec): Promise<Ensured> {
  const full = new Set<string>();
  let refused: SandboxError | undefined;
  for (;;) {
    let node: SandboxNode<unknown>;
    try {
      node = await place(s, spec, full);
    } catch (error) {
      throw refused ?? error; // no node left to ask: the last one's refusal says why
    }
    try {
      return await ensureOn(s, node, spec);
    } catch (error) {
      if (!(error instanceof SandboxError) || error.code !== 'CAPACITY_EXCEEDED') throw error;
      refused = error;
      full.add(node.name);
      s.cache.delete(node.name);
    }
  }
}

/**
 * A new agent's node: its family's when that takes new agents, else the freest of K sampled; none
 * of `full` (nodes that refused it for capacity just now).
 */
async function place(
  s: State,
  spec: NodeSandboxSpec,
  full: ReadonlySet<string> = new Set(),
): Promise<SandboxNode<unknown>> {
  const runtime = spec.runtime ?? DEFAULT_RUNTIME;
  const cordoned = await cordonedNow(s);
  const takes = (n: SandboxNode<unknown>): boolean =>
    !cordoned.has(n.name) && !full.has(n.name) && s.health.down(n.name) === undefined;
  const family = spec.near === undefined ? undefined : (await locate(s, spec.near)).node;
  if (family !== undefined && takes(family)) return family;
  const open = shuffle(s.members.filter(takes), s.random).slice(0, s.sample);
  const [scored, mine] = await Promise.all([
    Promise.all(open.map(async (n) => ({ n, c: await capacityOf(s, n) }))),
    tenantCounts(s, spec.tenantId),
  ]);
  const held = heldOf(s);
  let best: { n: SandboxNode<unknown>; score: number; held: number } | undefined;
  for (const { n, c } of scored) {
    if (c === undefined || !c.runtimes.includes(runtime)) continue;
    // The cap is placement's (every node's least maxima), never what a node says of itself; and a
    // node holds at least the agents this process placed there, whatever it reports.
    const here = held(n.name);
    const counted = { ...c, sandboxes: Math.max(c.sandboxes, here) };
    const score = Math.min(freeOf(counted), shareCap(s.limits.maxima)) / (1 + (mine.get(n.name) ?? 0));
    if (best === undefined || score > best.score || (score === best.score && here < best.held))
      best = { n, score, held: here };
  }
  if (best === undefined)
    throw new SandboxError(
      'SANDBOX_UNAVAILABLE',
      `No node can take a new sandbox (${open.length === 0 ? 'every node is cordoned or unreachable' : `asked ${open.map((n) => n.name).join(', ')}`}).`,
    );
  return best.n;
}

/**
 * The agents this process knows on each node: what a node says of itself cannot change it, so it
 * breaks ties between nodes whose free share is capped (shareCap).
 */
function heldOf(s: State): (name: string) => number {
  const counts = new Map<string, number>();
  for (const name of s.where.values()) counts.set(name, (counts.get(name) ?? 0) + 1);
  return (name) => counts.get(name) ?? 0;
}

/** The tenant's agents per node: the store's count (every replica's placements), else this process's. */
async function tenantCounts(s: State, tenantId: string): Promise<Map<string, number>> {
  if (s.store !== undefined)
    return s.store.tenantCounts(tenantId).catch((e: unknown) => {
      s.onError(e);
      return new Map<string, number>();
    });
  const counts = new Map<string, number>();
  for (const [agentId, tenant] of s.tenants) {
    const node = tenant === tenantId ? s.where.get(agentId) : undefined;
    if (node !== undefined) counts.set(node, (counts.get(node) ?? 0) + 1);
  }
  return counts;
}

/** The node an agent made from a snapshot goes on: the snapshot's, refused while it takes no new agents. */
async function holder(s: State, spec: NodeSandboxSpec): Promise<SandboxNode<unknown>> {
  const id = spec.fromSnapshot as string;
  const name = spec.snapshotNode ?? s.snapshots.get(id);
  if (name === undefined) throw snapshotNowhere(id);
  const node = memberOf(s, name, `Snapshot ${id}`);
  if ((await cordonedNow(s)).has(name))
    throw new SandboxError(
      'NODE_CORDONED',
      `Snapshot ${id} is on node ${name}, which is cordoned: an agent made from it can only go there. Uncordon the node, or wait.`,
      { data: { node: name, snapshotId: id } },
    );
  const down = s.health.down(name);
  if (down !== undefined)
    throw new SandboxError(
      'NODE_UNREACHABLE',
      `Snapshot ${id} is on node ${name}, which does not answer (${down.error}); an agent made from it can only go there.`,
      { data: { node: name, snapshotId: id } },
    );
  return node;
}

/** The member named `name`; NODE_UNREACHABLE when no node of this control plane has that name (`what` is there). */
function memberOf(s: State, name: string, what: string): SandboxNode<unknown> {
  const node = s.byName.get(name);
  if (node === undefined)
    throw new SandboxError(
      'NODE_UNREACHABLE',
      `${what} is on node ${name}, which is not among this control plane's nodes (DSH_NODES).`,
      { data: { node: name } },
    );
  return node;
}

const snapshotNowhere = (id: string): SandboxError =>
  new SandboxError('NOT_FOUND', `No node is known to hold snapshot ${id}.`, { data: { snapshotId: id } });

/** Counts a placement into the cached capacity, so the next placements within the TTL spread. */
function counted(s: State, name: string): void {
  const c = s.cache.get(name)?.capacity;
  if (c !== undefined) {
    c.sandboxes += 1;
    c.running += 1;
  }
}

/**
 * Every node's adopt. A node that fails is passed over. A node's list is its word only, and moves,
 * records or looks up nothing (its containers' names, not agent ids: before, they were recorded as
 * agents): an agent recorded on a node stays there, and one with no record is found on its first
 * call by `find`, whose answer is checked (claimOf).
 */
async function adoptAll(s: State, options: Parameters<SandboxNode<unknown>['adopt']>[0]): Promise<string[]> {
  const answers = await Promise.all(
    s.members.map((n) =>
      n.adopt(options).then(
        (found) => ({ n, found }),
        (e: unknown) => {
          s.onError(e);
          return { n, found: [] };
        },
      ),
    ),
  );
  // What a node names are its containers, for the start's log line: nothing is looked up or
  // recorded by them, so an answer however long (a hostile node's) costs no store round trip.
  return answers.flatMap(({ found }) => found);
}

/**
 * Every node's sweep of the snapshot files no record keeps (each its own folder for this
 * instance); a node that keeps no snapshots is skipped, one that fails (it does not answer, an
 * older node agent) is passed over and reported (serve-sandboxes.ts sweeps a node again when it
 * answers again). The ids removed.
 */
async function sweepAll(
  s: State,
  recorded: (ids: string[]) => Promise<ReadonlySet<string>>,
): Promise<string[]> {
  const removed = await Promise.all(
    s.members.map(async (n) => {
      if (n.sweepSnapshots === undefined) return [];
      return n.sweepSnapshots(recorded).catch((e: unknown) => {
        // A node agent over Docker volumes keeps none: nothing to say at every start.
        if (!(e instanceof SandboxError && e.code === 'SNAPSHOT_UNSUPPORTED'))
          s.onError(new Error(`node ${n.name}: its snapshot files not swept (${String(e)})`, { cause: e }));
        return [];
      });
    }),
  );
  return removed.flat();
}

const unavailable = (node: string, what: string) =>
  new SandboxError('NODE_UNREACHABLE', `Node ${node} ${what}.`, { data: { node } });

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

/**
 * The most a node's free share counts for: what one sandbox may use at most (placement's maxima,
 * every node's least, in the units of freeOf: never a node's own word, which could raise it). Room
 * beyond that gives a new agent nothing, so a node that reports a huge machine (a lie, or a real one) ties with every node that has room for a sandbox at its maxima,
 * and the tie goes to the node holding fewer of this process's agents (heldOf): one node's numbers
 * cannot draw every new agent to it.
 */
export const shareCap = (maxima: SandboxLimits): number =>
  Math.min(maxima.nanoCpus / 1e9, maxima.memoryBytes / GIB);

const count = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** Bounds on what a node may report (far above any machine): a figure past one counts as the bound. */
export const CAPACITY_BOUNDS = {
  cpus: 4096,
  memoryBytes: 2 ** 50,
  diskFreeBytes: 2 ** 60,
  sandboxes: 1_000_000,
  poolSize: 1024,
} as const;

const whole = (v: number, most: number): number => Math.min(Math.floor(v), most);

/**
 * A node's capacity when every figure placement reads is a finite, non-negative number (undefined
 * otherwise), each taken as a whole number within CAPACITY_BOUNDS, with `running` at most
 * `sandboxes` and the pool's `ready` at most its `size`; its idle polling kept only when it is a
 * state idle-poll.ts knows.
 */
export function saneCapacity(c: NodeCapacity): NodeCapacity | undefined {
  if (typeof c !== 'object' || c === null) return undefined;
  const figures = [c.cpus, c.memoryBytes, c.sandboxes, c.running, c.pool?.ready, c.pool?.size];
  if (!figures.every(count) || !Array.isArray(c.runtimes)) return undefined;
  if (c.diskFreeBytes !== undefined && !count(c.diskFreeBytes)) return undefined;
  const b = CAPACITY_BOUNDS;
  const sandboxes = whole(c.sandboxes, b.sandboxes);
  const size = whole(c.pool.size, b.poolSize);
  const { idlePoll, ...rest } = c;
  return {
    ...rest,
    // What the node says of its idle polling, only when it is one of the states (GET /v1/nodes shows it).
    ...((IDLE_POLL_STATES as readonly unknown[]).includes(idlePoll) ? { idlePoll } : {}),
    cpus: whole(c.cpus, b.cpus),
    memoryBytes: whole(c.memoryBytes, b.memoryBytes),
    ...(c.diskFreeBytes === undefined ? {} : { diskFreeBytes: whole(c.diskFreeBytes, b.diskFreeBytes) }),
    sandboxes,
    running: whole(c.running, sandboxes),
    pool: { ready: whole(c.pool.ready, size), size },
    runtimes: [...c.runtimes],
  };
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

/** Placement's maxima (every node's least) and its defaults (the first node's, within them). */
function placementLimits(members: Member[]): { defaults: SandboxLimits; maxima: SandboxLimits } {
  const maxima = leastOf(members.map((n) => n.maxima));
  return { defaults: within((members[0] as Member).defaults, maxima), maxima };
}

/**
 * `defaults`, each limit it sets at most `maxima`'s (a limit it leaves unset stays unset). Placement's
 * defaults are the first node's within every node's maxima: each node checks what it is asked
 * against its own, so a default past one node's maximum would be refused there for every agent.
 */
function within(defaults: SandboxLimits, maxima: SandboxLimits): SandboxLimits {
  const out: SandboxLimits = { ...defaults };
  for (const key of Object.keys(out) as Array<keyof SandboxLimits>) {
    const most = maxima[key];
    if (most !== undefined && (out[key] as number) > most) out[key] = most;
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
