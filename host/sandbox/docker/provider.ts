// The docker provider: one hardened container per agent (config.ts), reached only through sandboxd
// over the container's attach stream. Owns the agent → container mapping, the warm pool, the idle
// reaper, re-adoption, and replacing containers that vanished behind its back.
// Invariants: everything it creates carries `dsh.managed=1`, `dsh.instance=<instance>` and the
// caller's labels, and is named `<prefix>-<instance>-…` (ownership.ts): several control planes
// may share one engine and each touches only its own. An assigned container is named
// `<prefix>-<instance>-agent-<slug(agentId)>` (Docker cannot relabel, but it can rename), so
// `get(agentId)` finds it after a restart by name alone; pooled containers are named
// `<prefix>-<instance>-pool-<id>` and carry `dsh.pool=1`; at most one live session per agent here;
// A pool hit makes no Docker call before the agent is ready: the rename follows in the background
// (destroy waits for it), and a restart that finds a pool container the store records as an
// agent's sandbox (`assigned`: the rename never happened) renames and adopts it instead of removing
// it. After adopt(), a container for an agent this process does not know can only be one adopt()
// listed, so create() and get() ask the engine only about those;
// a container that vanished (removed by hand or by the engine) is replaced on the agent's next
// call, on its old workspace when that still exists; a destroyed agent's handles never recreate.

import { rm } from 'node:fs/promises';
import Docker from 'dockerode';
import { nanoid } from 'nanoid';
import { SandboxError } from '../../errors.ts';
import { createResolver, WORKSPACE_ROOT } from '../paths.ts';
import { connectSandboxd, isUnresponsive, type SandboxdEgress } from '../sandboxd/client.ts';
import type { ProviderFlags, Sandbox, SandboxLimits, SandboxProvider, SandboxSpec } from '../types.ts';
import {
  DOCKER_DEFAULT_LIMITS,
  DOCKER_DEFAULT_MAXIMA,
  LABEL_AGENT,
  LABEL_INSTANCE,
  LABEL_MANAGED,
  LABEL_POOL,
  LABEL_POOL_OWNER,
  LABEL_TENANT,
  resolveLimits,
  resourceConfig,
} from './config.ts';
import { createSandboxContainer, limitsOf, removeSandboxContainer } from './containers.ts';
import { fromDocker, isContainerGone, isNotFound } from './errors.ts';
import { linksFolder, makeLinkDir, sweepLinkDirs } from './links.ts';
import { classify, listedWorkspace, naming, sweepable } from './ownership.ts';
import { createWarmPool, type PoolItem, type WarmPool } from './pool.ts';
import { type Reapable, startReaper } from './reaper.ts';
import { createSandboxHandle } from './sandbox.ts';
import {
  type ConnectSandboxd,
  closeLive,
  type Live,
  type OpenSessionOptions,
  openSession,
} from './session.ts';
import { containerUsage } from './usage.ts';
import { createVolumeWorkspaces } from './workspaces/volume.ts';
import { type WorkspaceMount, type WorkspaceStore, workspaceOf } from './workspaces.ts';

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
   * Workspaces of the default size made ahead (workspaces.ts keepSpares; loop workspaces: formatted
   * images), so that a cold create only mounts one. Default 0.
   */
  workspaceSpares?: number;
  /** Stop an agent's container after this long without a call (no running jobs). 0 disables. Default 900000. */
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
}

/** One agent known to this process; the reaper reads and writes its Reapable part. */
interface Entry extends Reapable {
  agentId: string;
  /** For the labels of a replacement container; unknown for a pooled container adopted after a restart. */
  tenantId: string | undefined;
  limits: SandboxLimits;
  /** Mounted again before the container starts (it is not, after a reboot). */
  workspace: WorkspaceMount | undefined;
  /** destroy() ran: calls through old handles fail instead of making a new container. */
  destroyed?: boolean;
  /** The rename of an assigned pool container, while it runs (destroy waits for it). */
  renaming?: Promise<void>;
  /** Its container was just created and never started (its first open need not inspect it). */
  created?: boolean;
  /** Its link folder, when this process made the container (else read from its inspect). */
  link?: string;
}

export interface AdoptOptions {
  /**
   * Container ids this instance's store records as its agents' sandboxes (`sandboxId`). Only a
   * container made before instance ids existed and listed here is adopted (ownership.ts).
   */
  claim?: Iterable<string>;
  /**
   * Container id → agent id for every agent of this instance's store that records a sandbox: a
   * pool container listed here was assigned to that agent by a process that ended before renaming
   * it, and is adopted under the agent's name instead of being removed as a leftover.
   */
  assigned?: ReadonlyMap<string, string>;
}

export type DockerProvider = SandboxProvider & {
  readonly pool: WarmPool;
  /**
   * Re-adoption at start: the names of this instance's agent containers on the engine (get() finds
   * each by name), after removing unassigned pool containers a previous process of this instance
   * left behind and sweeping its workspaces that no container uses. Never touches another
   * instance's containers or workspaces.
   */
  adopt(options?: AdoptOptions): Promise<string[]>;
};

export const createDockerProvider = (options: DockerProviderOptions): DockerProvider => {
  const docker = options.docker ?? new Docker();
  const prefix = options.prefix ?? 'dsh';
  const instance = options.instance;
  const names = naming(prefix, instance);
  const ownLabels = { ...options.labels, [LABEL_MANAGED]: '1', [LABEL_INSTANCE]: instance };
  const defaults = resolveLimits(
    DOCKER_DEFAULT_LIMITS,
    { ...DOCKER_DEFAULT_MAXIMA, ...options.maxima },
    options.defaults,
  );
  const maxima = { ...DOCKER_DEFAULT_MAXIMA, ...options.maxima };
  const idleMs = options.idleMs ?? 900_000;
  const tmpBytes = options.tmpBytes ?? 64 * 1024 * 1024;
  const connect = options.connect ?? ((o) => connectSandboxd(o));
  const onError = options.onError ?? (() => {});
  const resolve = createResolver(WORKSPACE_ROOT);
  const flags: ProviderFlags = { durableJobs: true, isolated: true, terminals: true, stdio: true };
  const entries = new Map<string, Entry>();
  /** Legacy agent container name → container id, for the ones adopt() found claimed by the store. */
  const legacy = new Map<string, string>();
  /** This process's pool nonce: pool containers of this instance with another one are leftovers. */
  const owner = nanoid(10);
  /** Agent container names adopt() found; undefined before adopt() (then any name may exist). */
  let adoptedNames: Set<string> | undefined;
  /** Whether the engine may hold a container for an agent this process does not know. */
  const mayExist = (agentId: string): boolean =>
    adoptedNames === undefined ||
    adoptedNames.has(names.agent(agentId)) ||
    legacy.has(names.legacyAgent(agentId));

  const workspaces = options.workspaces ?? createVolumeWorkspaces(docker);
  const spareBytes = defaults.diskBytes;
  if (spareBytes !== undefined)
    workspaces.keepSpares?.(names.own, spareBytes, options.workspaceSpares ?? 0, onError);
  const links = linksFolder(options.links, onError);
  const createContainer = async (
    name: string,
    labels: Record<string, string>,
    limits: SandboxLimits,
    reuse?: WorkspaceMount,
  ): Promise<{ container: Docker.Container; workspace: WorkspaceMount; link?: string }> => {
    const link = links === undefined ? undefined : await makeLinkDir(links);
    try {
      const made = await createSandboxContainer(docker, workspaces, {
        image: options.image,
        name,
        labels,
        limits,
        tmpBytes,
        ...(reuse ? { reuse } : {}),
        ...(link === undefined ? {} : { link }),
      });
      return link === undefined ? made : { ...made, link };
    } catch (e) {
      if (link !== undefined) await rm(link, { recursive: true, force: true });
      throw e;
    }
  };
  /** How sessions are opened: over the link when the container has one. */
  const sessionOptions = (extra: OpenSessionOptions): OpenSessionOptions => ({
    ...extra,
    ...(links === undefined ? {} : { links }),
    onLinkError: (e) =>
      onError(new SandboxError('SANDBOX_UNAVAILABLE', `${String(e)} (the attach stream serves instead)`)),
  });
  const removeContainer = (container: Docker.Container) =>
    removeSandboxContainer(workspaces, container, links);
  /** Removes a container and its workspace; the workspace also when the container is already gone. */
  const removeWith = async (container: Docker.Container, workspace: WorkspaceMount | undefined) => {
    await removeContainer(container);
    if (workspace) await workspaces.remove(workspace);
  };
  const agentLabels = (agentId: string, tenantId: string | undefined) => ({
    ...ownLabels,
    [LABEL_AGENT]: agentId,
    ...(tenantId === undefined ? {} : { [LABEL_TENANT]: tenantId }),
  });

  const pool = createWarmPool({
    size: options.pool?.size ?? 0,
    onError,
    make: async () => {
      const { container, workspace, link } = await createContainer(
        names.pool(nanoid(10)),
        { ...ownLabels, [LABEL_POOL]: '1', [LABEL_POOL_OWNER]: owner },
        defaults,
      );
      try {
        return {
          container,
          workspace,
          live: await openSession(
            container,
            connect,
            defaults,
            undefined,
            sessionOptions({ created: true, ...(link === undefined ? {} : { link }) }),
          ),
        };
      } catch (e) {
        await removeWith(container, workspace);
        throw e;
      }
    },
    discard: (item) => discardWarm(item),
  });

  async function discardWarm(item: PoolItem): Promise<void> {
    await closeLive(item.live);
    await removeWith(item.container, item.workspace);
  }

  /**
   * A container for a new agent: a pooled one when the pool has one that still answers (one that
   * vanished or fails is discarded, reported and skipped), else a new one.
   */
  const provision = async (
    agentId: string,
    tenantId: string,
    limits: SandboxLimits,
  ): Promise<{
    container: Docker.Container;
    workspace: WorkspaceMount;
    opened?: Live;
    renaming?: Promise<void>;
    link?: string;
  }> => {
    const name = names.agent(agentId);
    // A pooled workspace has the default size; a file system is not resized on assignment.
    const attempts = limits.diskBytes === defaults.diskBytes ? pool.ready : 0;
    for (let i = 0; i < attempts; i++) {
      const warm = pool.take();
      if (!warm) break;
      try {
        if (JSON.stringify(limits) !== JSON.stringify(defaults))
          await warm.container.update(resourceConfig(limits));
        // Off the path to ready: the store records the container id before the agent's first call,
        // and adopt() finishes a rename a crash interrupted (see the header).
        const renaming = warm.container.rename({ name }).catch((e: unknown) => {
          onError(fromDocker(e, 'Naming an assigned pooled sandbox', { agentId }));
        });
        return { container: warm.container, workspace: warm.workspace, opened: warm.live, renaming };
      } catch (e) {
        onError(fromDocker(e, 'Assigning a pooled sandbox (a new one is made instead)', { agentId }));
        void discardWarm(warm).catch(onError);
      }
    }
    return createContainer(name, agentLabels(agentId, tenantId), limits);
  };

  const track = (entry: Entry, opening: Promise<Live>): Promise<Live> => {
    entry.live = opening;
    const forget = (): void => {
      if (entry.live === opening) entry.live = undefined;
    };
    opening.then((l) => {
      const egress = l.session.egress;
      if (egress && options.egress) {
        const stop = options.egress(entry.agentId, egress);
        void l.attachment.closed.then(stop);
        void l.session.closed?.then(stop, stop);
      }
      void l.attachment.closed.then(forget);
      void l.session.closed?.then((reason) => {
        forget();
        // sandboxd stopped answering: restart its container now, so the next call finds it back.
        if (isUnresponsive(reason) && !entry.live && !entry.destroyed && entries.get(entry.agentId) === entry)
          track(entry, open(entry, true)).catch(onError);
      }, forget);
    }, forget);
    return opening;
  };

  const live = async (entry: Entry): Promise<Live> => {
    entry.lastUsed = Date.now();
    if (entry.stopping) await entry.stopping;
    return entry.live ?? track(entry, open(entry));
  };

  const open = async (entry: Entry, restart = false): Promise<Live> => {
    if (entry.destroyed)
      throw new SandboxError('SANDBOX_UNAVAILABLE', `The sandbox of agent ${entry.agentId} was destroyed.`, {
        data: { agentId: entry.agentId },
      });
    const created = entry.created === true;
    entry.created = false;
    try {
      if (entry.workspace) await workspaces.ready(entry.workspace);
      return await openSession(
        entry.container,
        connect,
        entry.limits,
        undefined,
        linkOf(entry, { restart, created }),
      );
    } catch (e) {
      if (!(await vanished(entry, e))) throw e;
    }
    await replace(entry);
    if (entry.workspace) await workspaces.ready(entry.workspace);
    return openSession(entry.container, connect, entry.limits, undefined, linkOf(entry, { created: true }));
  };

  /** Session options for an entry: its link folder when this process made its container. */
  const linkOf = (entry: Entry, extra: OpenSessionOptions): OpenSessionOptions =>
    sessionOptions({ ...extra, ...(entry.link === undefined ? {} : { link: entry.link }) });

  /** Whether `e` (or, when it says something else, an inspect now) shows the container is gone. */
  const vanished = async (entry: Entry, e: unknown): Promise<boolean> =>
    isContainerGone(e) ||
    entry.container.inspect().then(
      () => false,
      (x: unknown) => isNotFound(x),
    );

  /** A new container for an agent whose container vanished: on its old workspace when that remains. */
  const replace = async (entry: Entry): Promise<void> => {
    const old = entry.workspace;
    const kept = old !== undefined && (await workspaces.exists(old));
    const made = await createContainer(
      names.agent(entry.agentId),
      agentLabels(entry.agentId, entry.tenantId),
      entry.limits,
      kept ? old : undefined,
    );
    if (old && !kept) await workspaces.remove(old).catch(onError);
    entry.container = made.container;
    entry.workspace = made.workspace;
    entry.link = made.link;
    onError(
      new SandboxError(
        'SANDBOX_UNAVAILABLE',
        `The sandbox container of agent ${entry.agentId} was gone (removed outside this control plane); ` +
          (kept
            ? 'made a new one on its workspace (files kept, processes and jobs lost).'
            : 'made a new one with an empty workspace (its workspace was gone too).'),
        { data: { agentId: entry.agentId, container: made.container.id } },
      ),
    );
  };

  const detachEntry = async (entry: Entry): Promise<void> => {
    const l = entry.live;
    entry.live = undefined;
    if (l) await closeLive(await l.catch(() => undefined));
  };

  const handle = (entry: Entry, id: string): Sandbox =>
    createSandboxHandle({
      id,
      agentId: entry.agentId,
      root: WORKSPACE_ROOT,
      resolve,
      use: async (fn) => {
        entry.inFlight++;
        try {
          return await fn((await live(entry)).session);
        } finally {
          entry.inFlight--;
          entry.lastUsed = Date.now();
        }
      },
      detach: () => detachEntry(entry),
      ...(options.spoolDir === undefined ? {} : { spoolDir: options.spoolDir }),
    });

  const inspect = async (container: Docker.Container, agentId: string) => {
    try {
      return await container.inspect();
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw fromDocker(e, 'Looking up the sandbox', { agentId });
    }
  };

  /**
   * The agent's container: the one this process knows, else this instance's by name, else a legacy
   * one adopt() found claimed. A known entry whose container vanished stays known (its handles
   * follow a replacement) but reads as absent.
   */
  const lookup = async (agentId: string): Promise<{ entry: Entry; id: string } | undefined> => {
    const known = entries.get(agentId);
    if (known) {
      const info = await inspect(known.container, agentId);
      return info && { entry: known, id: info.Id };
    }
    if (!mayExist(agentId)) return undefined;
    for (const ref of [names.agent(agentId), legacy.get(names.legacyAgent(agentId))]) {
      if (ref === undefined) continue;
      const info = await inspect(docker.getContainer(ref), agentId);
      if (!info) continue;
      const entry: Entry = {
        agentId,
        tenantId: info.Config.Labels?.[LABEL_TENANT],
        container: docker.getContainer(info.Id),
        limits: { ...defaults, ...(await limitsOf(info, workspaces)) },
        workspace: workspaceOf(info),
        lastUsed: Date.now(),
        inFlight: 0,
      };
      entries.set(agentId, entry);
      return { entry, id: info.Id };
    }
    return undefined;
  };

  const stopReaper = startReaper({
    idleMs,
    entries: () => entries.values(),
    detach: (entry) => detachEntry(entry as Entry),
    onError,
  });

  return {
    name: 'docker',
    flags,
    maxima,
    pool,
    async create(spec: SandboxSpec) {
      const limits = resolveLimits(defaults, maxima, spec.limits);
      const existing = await lookup(spec.agentId);
      if (existing) return handle(existing.entry, existing.id);
      const { container, workspace, opened, renaming, link } = await provision(
        spec.agentId,
        spec.tenantId,
        limits,
      );
      const fresh = {
        container,
        limits,
        workspace,
        link,
        tenantId: spec.tenantId,
        lastUsed: Date.now(),
        created: opened === undefined,
        ...(renaming === undefined ? {} : { renaming }),
      };
      // A known entry whose container vanished takes the new one, so that its handles follow.
      let entry = entries.get(spec.agentId);
      if (entry) {
        await detachEntry(entry);
        Object.assign(entry, fresh);
      } else {
        entry = { agentId: spec.agentId, inFlight: 0, ...fresh };
        entries.set(spec.agentId, entry);
      }
      if (
        opened &&
        limits.maxReadBytes === defaults.maxReadBytes &&
        limits.maxOutputBytes === defaults.maxOutputBytes
      )
        track(entry, Promise.resolve(opened));
      else await closeLive(opened); // the client's caps differ: reconnect with this agent's
      await live(entry);
      return handle(entry, container.id);
    },
    async get(agentId) {
      const found = await lookup(agentId);
      return found && handle(found.entry, found.id);
    },
    async destroy(agentId) {
      const entry = (await lookup(agentId))?.entry ?? entries.get(agentId);
      if (!entry) return;
      entry.destroyed = true;
      await entry.renaming;
      await detachEntry(entry);
      entries.delete(agentId);
      // The workspace too when the container vanished without it.
      await removeWith(entry.container, entry.workspace);
    },
    async close() {
      stopReaper();
      await pool.close();
      await workspaces.dropSpares?.(names.own);
      for (const entry of entries.values()) {
        await entry.renaming;
        await detachEntry(entry);
      }
      entries.clear();
    },
    usage: (agentId, usageOptions) =>
      containerUsage(
        entries.get(agentId)?.container ?? docker.getContainer(names.agent(agentId)),
        workspaces,
        agentId,
        usageOptions,
      ),
    async adopt(adoptOptions = {}) {
      const list = await docker
        .listContainers({ all: true, filters: { label: [`${LABEL_MANAGED}=1`] } })
        .catch((e) => {
          throw fromDocker(e, 'Listing sandboxes');
        });
      const self = {
        prefix,
        instance,
        process: owner,
        claim: new Set(adoptOptions.claim ?? []),
        assigned: adoptOptions.assigned ?? new Map<string, string>(),
        owns: (m: WorkspaceMount) => workspaces.owns(m),
      };
      const adopted: string[] = [];
      // Workspaces any container still uses, whoever's it is: the sweep keeps them.
      const inUse: WorkspaceMount[] = [];
      for (const c of list) {
        const verdict = classify(c, self);
        if (verdict.kind === 'remove') {
          await removeContainer(docker.getContainer(c.Id)).catch(onError);
          continue;
        }
        if (verdict.kind === 'assign') {
          // An assignment whose rename a crash interrupted: finish it, then it is the agent's.
          const name = names.agent(verdict.agentId);
          try {
            await docker.getContainer(c.Id).rename({ name });
            adopted.push(name);
          } catch (e) {
            onError(fromDocker(e, 'Naming an assigned pooled sandbox', { agentId: verdict.agentId }));
          }
          const mount = listedWorkspace(c);
          if (mount) inUse.push(mount);
          continue;
        }
        const mount = listedWorkspace(c);
        if (mount) inUse.push(mount);
        if (verdict.kind === 'adopt') {
          adopted.push(verdict.name);
          if (verdict.legacy) legacy.set(verdict.name, c.Id);
        }
      }
      // This instance's workspaces whose container is gone (a crash between the two creations, a
      // removal by hand); another instance's are not ours to judge, even in a shared folder.
      await workspaces.sweep(inUse, false, sweepable(prefix, instance)).catch(onError);
      // Link folders no container mounts (a container removed behind our back, a crash mid-create).
      if (links !== undefined) await sweepLinkDirs(links, list).catch(onError);
      adoptedNames = new Set([...(adoptedNames ?? []), ...adopted]);
      return adopted;
    },
  };
};
