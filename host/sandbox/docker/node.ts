// The embedded node (nodes/types.ts SandboxNode) over one Docker engine: one hardened container per
// agent (config.ts), its workspace (workspaces.ts) and link folder (links.ts), the warm pool
// (pool.ts), re-adoption (adopt.ts), and pipes to each container's sandboxd (channel.ts). It is
// what `npm start` runs in the control plane's process, and what a node agent serves to a remote
// control plane. It never speaks sandboxd's protocol itself: a pooled container is verified by the
// warm hook its user gives (the control plane's session code), or not at all.
// This module wires the parts, each in its own module over one NodeState (node-state.ts: the
// settings, the known agents' containers, and making and removing a container with its workspace
// and link folder): provision.ts is ensure() and the pool's items; node-agents.ts is open, state,
// stop, pause and destroy; node-snapshots.ts copies a workspace into a snapshot; lookup.ts finds
// an agent's container; adopt.ts re-adopts at start.
// Invariants: everything it creates carries `dsh.managed=1`, `dsh.instance=<instance>` and the
// caller's labels, and is named `<prefix>-<instance>-…` (ownership.ts): several control planes
// may share one engine and each touches only its own. An assigned container is named
// `<prefix>-<instance>-agent-<slug(agentId)>` (Docker cannot relabel, but it can rename), so
// `find(agentId)` finds it after a restart by name alone; pooled containers are named
// `<prefix>-<instance>-pool-<id>` and carry `dsh.pool=1`.

import { statfs } from 'node:fs/promises';
import Docker from 'dockerode';
import { nanoid } from 'nanoid';
import type { AdoptAsking, NodeCapacity, PooledChannels, SandboxNode } from '../nodes/types.ts';
import type { SandboxLimits } from '../types.ts';
import { adopt, adoptQuestions } from './adopt.ts';
import {
  DOCKER_DEFAULT_LIMITS,
  DOCKER_DEFAULT_MAXIMA,
  LABEL_INSTANCE,
  LABEL_MANAGED,
  resolveLimits,
} from './config.ts';
import { fromDocker } from './errors.ts';
import { linksFolder } from './links.ts';
import { lookup } from './lookup.ts';
import { destroyAgent, openAgent, pauseAgent, stateOf, stopAgent } from './node-agents.ts';
import { dropSnapshotOf, snapshotAgent, sweepSnapshotsOf } from './node-snapshots.ts';
import type { NodeBase, NodeState, WarmHooks } from './node-state.ts';
import { naming } from './ownership.ts';
import { createWarmPool, type WarmPool } from './pool.ts';
import { discardWarm, ensureSandbox, makeWarm } from './provision.ts';
import { type EngineRuntimes, runtimeCatalog } from './runtimes.ts';
import { containerUsage } from './usage.ts';
import { createVolumeWorkspaces } from './workspaces/volume.ts';
import type { WorkspaceStore } from './workspaces.ts';

export interface DockerNodeOptions {
  /** The node's name in capacity reports and errors. Default 'local'. */
  name?: string;
  /** Default `new Docker()` (the local socket). */
  docker?: Docker;
  /** The sandbox image tag (Dockerfile.sandbox). Required. */
  image: string;
  /** The control-plane instance this node acts for (4-16 lowercase letters or digits: store/instance-id.ts): labels and names. */
  instance: string;
  /** Extra labels on every container and volume (e.g. a test run id). Default {}. */
  labels?: Record<string, string>;
  /** Default limits of a new sandbox. Default DOCKER_DEFAULT_LIMITS. */
  defaults?: Partial<SandboxLimits>;
  /** The most a sandbox may have. Default DOCKER_DEFAULT_MAXIMA. */
  maxima?: Partial<SandboxLimits>;
  /** Started, unassigned containers kept ready. Default { size: 0 }. */
  pool?: { size: number };
  /** This process's pool owner, the `dsh.pool.owner` label of its pool containers. Default: a fresh random one. */
  owner?: string;
  /** Workspaces of the default size made ahead (workspaces.ts keepSpares). Default 0. */
  workspaceSpares?: number;
  /** Size of the /tmp tmpfs. Default 64 MiB. */
  tmpBytes?: number;
  /** The cgroup every sandbox runs under (cgroup.ts prepareSandboxCgroup's answer). Default: the engine's. */
  cgroupParent?: string;
  /** Start of every container and volume name, before the instance id. Default 'dsh'. */
  prefix?: string;
  /** Background failures (pool refill, replaced containers). Default: ignored. */
  onError?: (error: unknown) => void;
  /** Where workspaces live and what bounds them. Default: plain Docker volumes without a size limit. */
  workspaces?: WorkspaceStore;
  /** A folder on the engine's host for the containers' link folders. Default none: the attach stream only. */
  links?: string;
  /** What is kept with a pooled container (node-state.ts WarmHooks). Default: its channel alone. */
  warm?: WarmHooks;
  /** A folder whose file system holds the workspaces, for capacity's free bytes. Default none. */
  diskPath?: string;
  /**
   * The engine's runtime name of each runtime but runc (host/sandbox/runtimes.ts); the engine
   * offers a runtime when `docker info` lists that name. Default { gvisor: 'runsc' }.
   */
  engineRuntimes?: EngineRuntimes;
  /** Roll stopped agent containers of another image to `image` at their next open (node-agents.ts). Default false. */
  rollImage?: boolean;
}

export type DockerNode = SandboxNode<unknown> & PooledChannels & AdoptAsking & { readonly pool: WarmPool };

const NO_WARM: WarmHooks = { make: async () => undefined, drop: async () => {} };

export function createDockerNode(options: DockerNodeOptions): DockerNode {
  const docker = options.docker ?? new Docker();
  const prefix = options.prefix ?? 'dsh';
  const instance = options.instance;
  const names = naming(prefix, instance);
  const maxima = { ...DOCKER_DEFAULT_MAXIMA, ...options.maxima };
  const defaults = resolveLimits(DOCKER_DEFAULT_LIMITS, maxima, options.defaults);
  const onError = options.onError ?? (() => {});
  const workspaces = options.workspaces ?? createVolumeWorkspaces(docker);
  if (defaults.diskBytes !== undefined)
    workspaces.keepSpares?.(names.own, defaults.diskBytes, options.workspaceSpares ?? 0, onError);
  const base: NodeBase = {
    docker,
    image: options.image,
    prefix,
    instance,
    names,
    ownLabels: { ...options.labels, [LABEL_MANAGED]: '1', [LABEL_INSTANCE]: instance },
    defaults,
    maxima,
    tmpBytes: options.tmpBytes ?? 64 * 1024 * 1024,
    ...(options.cgroupParent === undefined ? {} : { cgroupParent: options.cgroupParent }),
    warm: options.warm ?? NO_WARM,
    onError,
    entries: new Map(),
    legacy: new Map(),
    owner: options.owner ?? nanoid(10),
    adoptedNames: undefined,
    tenants: new Set(),
    creating: new Map(),
    dormant: new Map(),
    workspaces,
    links: linksFolder(options.links, onError),
    runtimes: runtimeCatalog(docker, options.engineRuntimes),
    rollImage: options.rollImage === true,
  };
  const poolSize = options.pool?.size ?? 0;
  // The pool makes its first item at once: from the base, before the state that holds it exists.
  const s: NodeState = Object.assign(base, {
    pool: createWarmPool({
      size: poolSize,
      onError,
      make: () => makeWarm(base),
      discard: (item) => discardWarm(base, item),
    }),
  });
  const name = options.name ?? 'local';
  return {
    name,
    defaults,
    maxima,
    pool: s.pool,
    ensure: (spec) => ensureSandbox(s, spec),
    async find(agentId) {
      const found = await lookup(s, agentId);
      if (found === undefined) return undefined;
      const { limits, tenantId } = found.entry;
      return { id: found.id, limits, ...(tenantId === undefined ? {} : { tenantId }) };
    },
    open: (agentId, openOptions) => openAgent(s, agentId, openOptions),
    state: (agentId) => stateOf(s, agentId),
    stop: (agentId) => stopAgent(s, agentId),
    pause: (agentId, mode) => pauseAgent(s, agentId, mode),
    destroy: (agentId) => destroyAgent(s, agentId),
    snapshot: (agentId, id) => snapshotAgent(s, agentId, id),
    dropSnapshot: (id) => dropSnapshotOf(s, id),
    sweepSnapshots: (recorded) => sweepSnapshotsOf(s, recorded),
    usage: (agentId, usageOptions) =>
      containerUsage(
        s.entries.get(agentId)?.container ?? docker.getContainer(names.agent(agentId)),
        workspaces,
        agentId,
        usageOptions,
      ),
    adopt: (adoptOptions) => adopt(s, adoptOptions),
    adoptQuestions: (knownAt) => adoptQuestions(s, knownAt),
    capacity: () => capacity(s, name, poolSize, options.diskPath),
    unclaimed: () => s.pool.unclaimed(),
    claim: (id) => s.pool.claim(id),
    poolFor: (claims) => ({ ready: s.pool.readyFor(claims), size: poolSize }),
    async close() {
      await s.pool.close();
      await s.workspaces.dropSpares?.(s.names.own);
      for (const entry of s.entries.values()) {
        entry.pending?.close();
        await entry.renaming;
      }
      s.entries.clear();
    },
  };
}

/** The node's capacity: the engine's CPUs and memory, this instance's containers, the pool, free disk. */
async function capacity(
  s: NodeState,
  node: string,
  size: number,
  diskPath: string | undefined,
): Promise<NodeCapacity> {
  try {
    const [info, list, disk, runtimes] = await Promise.all([
      s.docker.info() as Promise<{ NCPU: number; MemTotal: number }>,
      s.docker.listContainers({ all: true, filters: { label: [`${LABEL_INSTANCE}=${s.instance}`] } }),
      diskPath === undefined ? undefined : statfs(diskPath).catch(() => undefined),
      s.runtimes.offered(),
    ]);
    return {
      node,
      cpus: info.NCPU,
      memoryBytes: info.MemTotal,
      ...(disk === undefined ? {} : { diskFreeBytes: disk.bavail * disk.bsize }),
      sandboxes: list.length,
      running: list.filter((c) => c.State === 'running').length,
      pool: { ready: s.pool.ready, size },
      runtimes: [...runtimes],
    };
  } catch (e) {
    throw fromDocker(e, 'Reading the node capacity', { node });
  }
}
