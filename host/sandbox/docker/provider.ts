// The docker provider: one hardened container per agent (config.ts), reached only through sandboxd
// over the container's attach stream or its link socket. Owns the agent → container mapping, the
// warm pool, the idle reaper, re-adoption, and replacing containers that vanished behind its back.
// This module wires the parts, each in its own module over one ProviderState (provider-state.ts:
// the settings, the known agents, and making and removing a container with its workspace and link
// folder): provision.ts is create() (the agent's container, else a pooled one, else a new one) and
// the pool's items (pool.ts keeps them); agent-live.ts opens, follows and reopens an agent's
// session, replaces a vanished container, and makes the agent's Sandbox handle; lookup.ts finds an
// agent's container; adopt.ts re-adopts at start; reaper.ts stops idle containers (or
// pauses them, where their tenant asks); pause.ts pauses and resumes one.
// Invariants: everything it creates carries `dsh.managed=1`, `dsh.instance=<instance>` and the
// caller's labels, and is named `<prefix>-<instance>-…` (ownership.ts): several control planes
// may share one engine and each touches only its own. An assigned container is named
// `<prefix>-<instance>-agent-<slug(agentId)>` (Docker cannot relabel, but it can rename), so
// `get(agentId)` finds it after a restart by name alone; pooled containers are named
// `<prefix>-<instance>-pool-<id>` and carry `dsh.pool=1`; at most one live session per agent here;
// a destroyed agent's handles never recreate.

import Docker from 'dockerode';
import { nanoid } from 'nanoid';
import { createResolver, WORKSPACE_ROOT } from '../paths.ts';
import type { SandboxRuntime } from '../runtimes.ts';
import { connectSandboxd, type SandboxdEgress } from '../sandboxd/client.ts';
import type { IdlePauses, ProviderFlags, SandboxLimits, SandboxProvider } from '../types.ts';
import { type AdoptOptions, adopt } from './adopt.ts';
import { detachEntry, handleOf } from './agent-live.ts';
import {
  DOCKER_DEFAULT_LIMITS,
  DOCKER_DEFAULT_MAXIMA,
  LABEL_INSTANCE,
  LABEL_MANAGED,
  resolveLimits,
} from './config.ts';
import { linksFolder } from './links.ts';
import { lookup } from './lookup.ts';
import { naming } from './ownership.ts';
import { pauseSandbox, resumeSandbox } from './pause.ts';
import { createWarmPool, type WarmPool } from './pool.ts';
import { type Entry, type ProviderBase, type ProviderState, removeWith } from './provider-state.ts';
import { createSandbox, discardWarm, makeWarm } from './provision.ts';
import { startReaper } from './reaper.ts';
import { type EngineRuntimes, runtimeCatalog } from './runtimes.ts';
import type { ConnectSandboxd } from './session.ts';
import { containerUsage } from './usage.ts';
import { createVolumeWorkspaces } from './workspaces/volume.ts';
import type { WorkspaceStore } from './workspaces.ts';

export interface DockerProviderOptions {
  /** Default `new Docker()` (the local socket). */
  docker?: Docker;
  /** The sandbox image tag (Dockerfile.sandbox). Required. */
  image: string;
  /**
   * The control-plane instance this provider acts for: its store's `instanceId` (1-16 lowercase
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
   * createSandboxEgress().attach); the returned stop runs when that session ends. Default none:
   * sandboxd's proxy answers every connection 503.
   */
  egress?: (agentId: string, egress: SandboxdEgress) => () => void;
  /**
   * A folder on this host (the engine's host) for the containers' link folders: each container
   * gets one, bind-mounted read-only, and its sessions run over a unix socket there instead of the
   * attach stream (session.ts), with no dockerd or containerd-shim in between. Default none: the
   * attach stream only (an engine on another host cannot see this host's folders).
   */
  links?: string;
  /**
   * The engine's runtime name of each runtime but runc (host/sandbox/runtimes.ts); the engine
   * offers a runtime when `docker info` lists that name. Default { gvisor: 'runsc' }.
   */
  engineRuntimes?: EngineRuntimes;
}

export type DockerProvider = SandboxProvider & {
  readonly pool: WarmPool;
  /**
   * Re-adoption at start: the names of this instance's agent containers on the engine (get() finds
   * each by name), after removing unassigned pool containers a previous process of this instance
   * left behind (not those of a replica that still runs: options.replicas) and sweeping its
   * workspaces that no container uses. Never touches another instance's containers or workspaces.
   */
  adopt(options?: AdoptOptions): Promise<string[]>;
  /** The runtimes the engine offers (runtimes.ts: `docker info`, read once it answers). */
  runtimes(): Promise<readonly SandboxRuntime[]>;
};

export function createDockerProvider(options: DockerProviderOptions): DockerProvider {
  const docker = options.docker ?? new Docker();
  const prefix = options.prefix ?? 'dsh';
  const instance = options.instance;
  const names = naming(prefix, instance);
  const maxima = { ...DOCKER_DEFAULT_MAXIMA, ...options.maxima };
  const defaults = resolveLimits(DOCKER_DEFAULT_LIMITS, maxima, options.defaults);
  const onError = options.onError ?? (() => {});
  const flags: ProviderFlags = { durableJobs: true, isolated: true, terminals: true, stdio: true };
  const workspaces = options.workspaces ?? createVolumeWorkspaces(docker);
  if (defaults.diskBytes !== undefined)
    workspaces.keepSpares?.(names.own, defaults.diskBytes, options.workspaceSpares ?? 0, onError);
  const base: ProviderBase = {
    docker,
    image: options.image,
    prefix,
    instance,
    names,
    ownLabels: { ...options.labels, [LABEL_MANAGED]: '1', [LABEL_INSTANCE]: instance },
    defaults,
    maxima,
    tmpBytes: options.tmpBytes ?? 64 * 1024 * 1024,
    connect: options.connect ?? ((o) => connectSandboxd(o)),
    onError,
    resolve: createResolver(WORKSPACE_ROOT),
    egress: options.egress,
    spoolDir: options.spoolDir,
    entries: new Map(),
    legacy: new Map(),
    owner: options.owner ?? nanoid(10),
    adoptedNames: undefined,
    workspaces,
    links: linksFolder(options.links, onError),
    runtimes: runtimeCatalog(docker, options.engineRuntimes),
  };
  // The pool makes its first item at once: from the base, before the state that holds it exists.
  const s: ProviderState = Object.assign(base, {
    pool: createWarmPool({
      size: options.pool?.size ?? 0,
      onError,
      make: () => makeWarm(base),
      discard: (item) => discardWarm(base, item),
    }),
  });
  let idlePauses: IdlePauses | undefined;
  const stopReaper = startReaper({
    idleMs: options.idleMs ?? 900_000,
    pauses: () => idlePauses,
    entries: () => s.entries.values(),
    detach: (entry) => detachEntry(entry as Entry),
    onError,
  });

  return {
    name: 'docker',
    flags,
    maxima,
    pool: s.pool,
    create: (spec) => createSandbox(s, spec),
    async get(agentId) {
      const found = await lookup(s, agentId);
      return found && handleOf(s, found.entry, found.id);
    },
    destroy: (agentId) => destroy(s, agentId),
    close: () => close(s, stopReaper),
    usage: (agentId, usageOptions) =>
      containerUsage(
        s.entries.get(agentId)?.container ?? docker.getContainer(names.agent(agentId)),
        workspaces,
        agentId,
        usageOptions,
      ),
    adopt: (adoptOptions) => adopt(s, adoptOptions),
    pause: (agentId, mode) => pauseSandbox(s, agentId, mode),
    resume: (agentId) => resumeSandbox(s, agentId),
    pauseWhenIdle(idle) {
      idlePauses = idle;
    },
    runtimes: () => s.runtimes.offered(),
  };
}

async function destroy(s: ProviderState, agentId: string): Promise<void> {
  const entry = (await lookup(s, agentId))?.entry ?? s.entries.get(agentId);
  if (!entry) return;
  entry.destroyed = true;
  await entry.renaming;
  await detachEntry(entry);
  s.entries.delete(agentId);
  // The workspace too when the container vanished without it.
  await removeWith(s, entry.container, entry.workspace);
}

async function close(s: ProviderState, stopReaper: () => void): Promise<void> {
  stopReaper();
  await s.pool.close();
  await s.workspaces.dropSpares?.(s.names.own);
  for (const entry of s.entries.values()) {
    await entry.renaming;
    await detachEntry(entry);
  }
  s.entries.clear();
}
