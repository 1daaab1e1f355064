// The docker provider on the control plane's side of a node (nodes/types.ts, docs/nodes.md): it
// places each agent's sandbox on a node, runs the sandboxd client over the bytes the node gives
// (session.ts: every frame validated here), and keeps the session logic: sessions opened on demand
// and followed (agent-live.ts), reconnects and restarts when sandboxd stops answering, the idle
// reaper's decisions (reaper.ts: stop, or pause where the agent's tenant asks; the node does the
// stop), pause and resume (pause.ts: AGENT_BUSY and the session closed here; the node stops or
// freezes), and the agents' Sandbox handles (sandbox.ts). The machine's side (containers, workspaces, pool, link folders, adoption) is the
// node's: by default the embedded node over the local engine (node.ts), made from these options.
// Invariants: at most one live session per agent here; a destroyed agent's handles never
// recreate; a pooled sandbox's session, opened and verified by this provider's own code (the
// warm hook, on the embedded node and on remote ones: their warm sessions), is used as is only when the agent's read and output caps are the
// defaults (else it is closed and opened again with the agent's).

import type Docker from 'dockerode';
import type { AttachedEgress } from '../../egress/proxy/index.ts';
import { SandboxError } from '../../errors.ts';
import { isPlacement } from '../nodes/placement.ts';
import type { AdoptOptions, SandboxNode, WarmHooks } from '../nodes/types.ts';
import { createResolver, WORKSPACE_ROOT } from '../paths.ts';
import type { SandboxRuntime } from '../runtimes.ts';
import { connectSandboxd, type SandboxdEgress } from '../sandboxd/client.ts';
import type {
  IdlePauses,
  ProviderFlags,
  Sandbox,
  SandboxLimits,
  SandboxProvider,
  SandboxSpec,
} from '../types.ts';
import {
  type Agent,
  detachAgent,
  handleOf,
  live,
  type Sessions,
  sessionOptions,
  track,
} from './agent-live.ts';
import { resolveLimits } from './config.ts';
import { createDockerNode } from './node.ts';
import { pauseSandbox, resumeSandbox } from './pause.ts';
import { startReaper } from './reaper.ts';
import type { EngineRuntimes } from './runtimes.ts';
import { type ConnectSandboxd, closeLive, connectChannel, type Live } from './session.ts';
import type { WorkspaceStore } from './workspaces.ts';

export interface DockerProviderOptions {
  /** Default `new Docker()` (the local socket). */
  docker?: Docker;
  /** The sandbox image tag (Dockerfile.sandbox). Required. */
  image: string;
  /**
   * The control-plane instance this provider acts for: its store's `instanceId` (4-16 lowercase
   * letters or digits). Required. Labels (`dsh.instance`) and names every container and volume;
   * adopt(), the reaper and removal touch only what carries it.
   */
  instance: string;
  /** Extra labels on every container and volume (e.g. a test run id). Default {}. */
  labels?: Record<string, string>;
  /** Default limits of a new sandbox. Default DOCKER_DEFAULT_LIMITS. */
  defaults?: Partial<SandboxLimits>;
  /** The most a spec may ask for; above it create() fails with LIMIT_EXCEEDED. Default DOCKER_DEFAULT_MAXIMA. */
  maxima?: Partial<SandboxLimits>;
  /** Started, unassigned containers kept ready. Default { size: 0 }. */
  pool?: { size: number };
  /**
   * This process's pool owner, the `dsh.pool.owner` label of its pool containers: another
   * process's adopt() removes them only when this owner no longer runs (AdoptOptions.replicas).
   * Replicas pass their lease holder. Default: a fresh random one.
   */
  owner?: string;
  /**
   * Workspaces of the default size made ahead (workspaces.ts keepSpares; loop workspaces: formatted
   * images), so that a cold create only mounts one. Default 0.
   */
  workspaceSpares?: number;
  /**
   * Stop an agent's container after this long without a call (no running jobs). 0 disables. Default
   * 900000. Agents of tenants with idle pauses (pauseWhenIdle) are paused by then at the latest.
   */
  idleMs?: number;
  /** Size of the /tmp tmpfs. Default 64 MiB. */
  tmpBytes?: number;
  /** The cgroup every sandbox of the embedded node runs under (cgroup.ts). Default: the engine's. */
  cgroupParent?: string;
  /** Start of every container and volume name, before the instance id. Default 'dsh'. */
  prefix?: string;
  /** Default connectSandboxd (host/sandbox/sandboxd/client.ts). */
  connect?: ConnectSandboxd;
  /** Background failures (pool refill, reaper). Default: ignored. */
  onError?: (error: unknown) => void;
  /**
   * Where workspaces live and what bounds them (workspaces.ts). One store root per provider.
   * Default: plain Docker volumes without a size limit; the service passes loop workspaces.
   */
  workspaces?: WorkspaceStore;
  /** Where archive uploads are spooled while they are checked (a disk, not a tmpfs). Default os.tmpdir(). */
  spoolDir?: string;
  /**
   * Serves the egress proxy of an agent's sandbox on each session opened for it (host/egress/proxy:
   * createSandboxEgress().attach); the session's calls wait for its `trusted`, its `stop` runs when
   * that session ends. Default none: sandboxd's proxy answers every connection 503.
   */
  egress?: (agentId: string, egress: SandboxdEgress) => AttachedEgress;
  /**
   * The node the sandboxes live on. Default: the embedded node over `docker` (node.ts), made from
   * the options above and below (with it given, those the node owns are ignored).
   */
  node?: SandboxNode<unknown>;
  /**
   * A folder on this host (the engine's host) for the containers' link folders: each container
   * gets one, bind-mounted read-only, and its sessions run over a unix socket there instead of the
   * attach stream (session.ts), with no dockerd or containerd-shim in between. Default none: the
   * attach stream only (an engine on another host cannot see this host's folders).
   */
  links?: string;
  /**
   * The engine's runtime name of each runtime but runc (host/sandbox/runtimes.ts), for the embedded
   * node; the engine offers a runtime when `docker info` lists that name. Default { gvisor: 'runsc' }.
   */
  engineRuntimes?: EngineRuntimes;
  /**
   * A stopped agent container made from another image than `image` is made again from `image`
   * on its workspace when the agent is next opened (node-agents.ts). Default false.
   */
  rollImage?: boolean;
}

export type DockerProvider = SandboxProvider & {
  readonly pool: SandboxNode<unknown>['pool'];
  /** The node this provider places sandboxes on. */
  readonly node: SandboxNode<unknown>;
  /**
   * Re-adoption at start: the names of this instance's agent containers on the node (get() finds
   * each by name), after removing unassigned pool containers a previous process of this instance
   * left behind (not those of a replica that still runs: options.replicas) and sweeping its
   * workspaces that no container uses. Never touches another instance's containers or workspaces.
   */
  adopt(options?: AdoptOptions): Promise<string[]>;
  /** The runtimes the node's engine offers (its capacity()'s, read once it answers). */
  runtimes(): Promise<readonly SandboxRuntime[]>;
};

export function createDockerProvider(options: DockerProviderOptions): DockerProvider {
  const onError = options.onError ?? (() => {});
  const flags: ProviderFlags = { durableJobs: true, isolated: true, terminals: true, stdio: true };
  const s: Sessions = {
    node: undefined as unknown as SandboxNode<unknown>, // set below: the node's warm hook needs s
    connect: options.connect ?? ((o) => connectSandboxd(o)),
    agents: new Map(),
    onError,
    resolve: createResolver(WORKSPACE_ROOT),
    egress: options.egress,
    spoolDir: options.spoolDir,
  };
  s.node = options.node ?? embeddedNode(options, s);
  const node = s.node;
  // A given node (remote ones, behind placement) keeps its pooled sandboxes' sessions with the same hooks.
  if (options.node !== undefined) node.warmWith?.(warmHooks(s));
  let idlePauses: IdlePauses | undefined;
  const stopReaper = startReaper({
    idleMs: options.idleMs ?? 900_000,
    pauses: () => idlePauses,
    entries: () => s.agents.values(),
    detach: (agent) => detachAgent(agent as Agent),
    stop: (agentId) => node.stop(agentId),
    onError,
  });

  return {
    name: 'docker',
    flags,
    maxima: node.maxima,
    pool: node.pool,
    node,
    create: (spec) => createSandbox(s, spec),
    async get(agentId) {
      const found = await node.find(agentId);
      return found && handleOf(s, agentOf(s, agentId, found.limits, found.tenantId), found.id);
    },
    destroy: (agentId) => destroy(s, agentId),
    async close() {
      stopReaper();
      await node.close();
      for (const agent of s.agents.values()) await detachAgent(agent);
      s.agents.clear();
    },
    usage: (agentId, usageOptions) => node.usage(agentId, usageOptions),
    unreachable: (agentId) => node.unreachable?.(agentId),
    adopt: (adoptOptions) => node.adopt(adoptOptions),
    pause: (agentId, mode) => pauseSandbox(s, agentId, mode),
    resume: (agentId) =>
      resumeSandbox(s, agentId, (found) => agentOf(s, agentId, found.limits, found.tenantId)),
    pauseWhenIdle(idle) {
      idlePauses = idle;
    },
    runtimes: runtimesOf(node),
    ...snapshotsOf(node),
  };
}

/** The node's snapshots, where it has them; placement names which of its nodes holds each one. */
function snapshotsOf(node: SandboxNode<unknown>): Pick<SandboxProvider, 'snapshot' | 'dropSnapshot'> {
  const { snapshot, dropSnapshot } = node;
  if (snapshot === undefined || dropSnapshot === undefined) return {};
  const several = isPlacement(node);
  return {
    snapshot: async (agentId, id) => {
      const { node: at, ...taken } = await snapshot(agentId, id);
      return { node: several && at !== undefined ? at : node.name, ...taken };
    },
    async dropSnapshot(id, at) {
      if (several) return dropSnapshot(id, at);
      if (at !== node.name)
        throw new SandboxError('SANDBOX_UNAVAILABLE', `Snapshot ${id} is on node ${at}, not served here.`);
      await dropSnapshot(id);
    },
  };
}

/** The runtimes the node offers: asked once, and again after a failed ask (health asks often). */
function runtimesOf(node: SandboxNode<unknown>): () => Promise<readonly SandboxRuntime[]> {
  let reading: Promise<readonly SandboxRuntime[]> | undefined;
  return () => {
    if (reading === undefined) {
      const attempt = node.capacity().then((c) => c.runtimes);
      reading = attempt;
      attempt.catch(() => {
        if (reading === attempt) reading = undefined;
      });
    }
    return reading;
  };
}

/** The embedded node over the local engine, its pooled sandboxes verified by this provider's sessions. */
function embeddedNode(options: DockerProviderOptions, s: Sessions): SandboxNode<unknown> {
  return createDockerNode({
    ...options,
    onError: s.onError,
    warm: warmHooks(s),
  });
}

/** This provider's warm hooks: a pooled sandbox's session opened and verified by its own code. */
const warmHooks = (s: Sessions): WarmHooks => ({
  make: (channel, limits) => connectChannel(channel, sessionOptions(s, limits)),
  drop: (warm) => closeLive(warm as Live | undefined),
});

/** The agent's entry here, made when this process does not know it yet. */
function agentOf(s: Sessions, agentId: string, limits: SandboxLimits, tenantId?: string): Agent {
  let agent = s.agents.get(agentId);
  if (!agent) {
    agent = { agentId, tenantId, limits, lastUsed: Date.now(), inFlight: 0 };
    s.agents.set(agentId, agent);
  }
  agent.tenantId ??= tenantId;
  return agent;
}

/** The provider's create(): the agent's sandbox, ready (its session open). */
async function createSandbox(s: Sessions, spec: SandboxSpec): Promise<Sandbox> {
  const { node } = s;
  const limits = resolveLimits(node.defaults, node.maxima, spec.limits);
  if (spec.fromSnapshot !== undefined && node.snapshot === undefined)
    throw new SandboxError('SNAPSHOT_UNSUPPORTED', 'The sandboxes here have no snapshots.');
  const placed = await node.ensure({
    agentId: spec.agentId,
    tenantId: spec.tenantId,
    limits,
    ...(spec.runtime === undefined ? {} : { runtime: spec.runtime }),
    ...(spec.near === undefined ? {} : { near: spec.near }),
    ...(spec.fromSnapshot === undefined ? {} : { fromSnapshot: spec.fromSnapshot }),
    ...(spec.snapshotNode === undefined ? {} : { snapshotNode: spec.snapshotNode }),
    ...(spec.fresh === true ? { fresh: true } : {}),
  });
  if (placed.found) return handleOf(s, agentOf(s, spec.agentId, placed.limits, spec.tenantId), placed.id);
  // A known agent whose sandbox vanished takes the new one, so that its handles follow.
  const agent = agentOf(s, spec.agentId, limits, spec.tenantId);
  await detachAgent(agent);
  Object.assign(agent, { limits, lastUsed: Date.now(), destroyed: false });
  const warm = placed.warm as Live | undefined;
  const d = node.defaults;
  if (warm && limits.maxReadBytes === d.maxReadBytes && limits.maxOutputBytes === d.maxOutputBytes)
    track(s, agent, Promise.resolve(warm));
  else await closeLive(warm); // the client's caps differ: reconnect with this agent's
  await live(s, agent);
  return handleOf(s, agent, placed.id);
}

async function destroy(s: Sessions, agentId: string): Promise<void> {
  const agent = s.agents.get(agentId);
  if (agent) {
    agent.destroyed = true;
    await detachAgent(agent);
    s.agents.delete(agentId);
  }
  await s.node.destroy(agentId);
}
