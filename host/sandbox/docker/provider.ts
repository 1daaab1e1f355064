// The docker provider: one hardened container per agent (config.ts), reached only through sandboxd
// over the container's attach stream. Owns the agent → container mapping, the warm pool, the idle
// reaper and re-adoption.
// Invariants: an assigned container is named `<prefix>-agent-<slug(agentId)>` (Docker cannot
// relabel, but it can rename), so `get(agentId)` finds it after a restart by name alone; pooled
// containers are named `<prefix>-pool-<id>` and carry `dsh.pool=1`; every container and volume
// carries `dsh.managed=1` plus the caller's labels; at most one live session per agent here.

import Docker from 'dockerode';
import { nanoid } from 'nanoid';
import { createResolver, WORKSPACE_ROOT } from '../paths.ts';
import { connectSandboxd } from '../sandboxd/client.ts';
import type { ProviderFlags, Sandbox, SandboxLimits, SandboxProvider, SandboxSpec } from '../types.ts';
import {
  DOCKER_DEFAULT_LIMITS,
  DOCKER_DEFAULT_MAXIMA,
  LABEL_AGENT,
  LABEL_MANAGED,
  LABEL_POOL,
  LABEL_POOL_OWNER,
  LABEL_TENANT,
  resolveLimits,
  resourceConfig,
} from './config.ts';
import { agentSlug, createSandboxContainer, limitsOf, removeSandboxContainer } from './containers.ts';
import { fromDocker, isNotFound } from './errors.ts';
import { createWarmPool, type WarmPool } from './pool.ts';
import { type Reapable, startReaper } from './reaper.ts';
import { createSandboxHandle } from './sandbox.ts';
import { type ConnectSandboxd, closeLive, type Live, openSession } from './session.ts';
import {
  createVolumeWorkspaces,
  type WorkspaceMount,
  type WorkspaceStore,
  workspaceOf,
} from './workspaces.ts';

export interface DockerProviderOptions {
  /** Default `new Docker()` (the local socket). */
  docker?: Docker;
  /** The sandbox image tag (Dockerfile.sandbox). Required. */
  image: string;
  /** Extra labels on every container and volume (e.g. a test run id). Default {}. */
  labels?: Record<string, string>;
  /** Default limits of a new sandbox. Default DOCKER_DEFAULT_LIMITS. */
  defaults?: Partial<SandboxLimits>;
  /** The most a spec may ask for; above it create() fails with LIMIT_EXCEEDED. Default DOCKER_DEFAULT_MAXIMA. */
  maxima?: Partial<SandboxLimits>;
  /** Started, unassigned containers kept ready. Default { size: 0 }. */
  pool?: { size: number };
  /** Stop an agent's container after this long without a call (no running jobs). 0 disables. Default 900000. */
  idleMs?: number;
  /** Size of the /tmp tmpfs. Default 64 MiB. */
  tmpBytes?: number;
  /** Container and volume name prefix; one per deployment. Default 'dsh'. */
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
}

/** One agent known to this process; the reaper reads and writes its Reapable part. */
interface Entry extends Reapable {
  agentId: string;
  limits: SandboxLimits;
  /** Mounted again before the container starts (it is not, after a reboot). */
  workspace: WorkspaceMount | undefined;
}

export const createDockerProvider = (
  options: DockerProviderOptions,
): SandboxProvider & { readonly pool: WarmPool; adopt(): Promise<string[]> } => {
  const docker = options.docker ?? new Docker();
  const prefix = options.prefix ?? 'dsh';
  const extraLabels = options.labels ?? {};
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
  const flags: ProviderFlags = { durableJobs: true, isolated: true, terminals: true };
  const entries = new Map<string, Entry>();
  const agentName = (agentId: string): string => `${prefix}-agent-${agentSlug(agentId)}`;
  const owner = nanoid(10);

  const workspaces = options.workspaces ?? createVolumeWorkspaces(docker);
  const createContainer = (name: string, labels: Record<string, string>, limits: SandboxLimits) =>
    createSandboxContainer(docker, workspaces, { image: options.image, name, labels, limits, tmpBytes });
  const removeContainer = (container: Docker.Container) => removeSandboxContainer(workspaces, container);

  const pool = createWarmPool({
    size: options.pool?.size ?? 0,
    onError,
    make: async () => {
      const name = `${prefix}-pool-${nanoid(10).replace(/[^a-zA-Z0-9]/g, 'x')}`;
      const { container, workspace } = await createContainer(
        name,
        { ...extraLabels, [LABEL_MANAGED]: '1', [LABEL_POOL]: '1', [LABEL_POOL_OWNER]: owner },
        defaults,
      );
      try {
        return { container, workspace, live: await openSession(docker, container, connect, defaults) };
      } catch (e) {
        await removeContainer(container);
        throw e;
      }
    },
    discard: async (item) => {
      await closeLive(item.live);
      await removeContainer(item.container);
    },
  });

  const track = (entry: Entry, opening: Promise<Live>): Promise<Live> => {
    entry.live = opening;
    const forget = (): void => {
      if (entry.live === opening) entry.live = undefined;
    };
    opening.then((l) => {
      void l.attachment.closed.then(forget);
      void l.session.closed?.then(forget, forget);
    }, forget);
    return opening;
  };

  const live = async (entry: Entry): Promise<Live> => {
    entry.lastUsed = Date.now();
    if (entry.stopping) await entry.stopping;
    return entry.live ?? track(entry, open(entry));
  };

  const open = async (entry: Entry): Promise<Live> => {
    if (entry.workspace) await workspaces.ready(entry.workspace);
    return openSession(docker, entry.container, connect, entry.limits);
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

  const lookup = async (agentId: string): Promise<{ entry: Entry; id: string } | undefined> => {
    const known = entries.get(agentId);
    const container = known?.container ?? docker.getContainer(agentName(agentId));
    try {
      const info = await container.inspect();
      const entry: Entry = known ?? {
        agentId,
        container: docker.getContainer(info.Id),
        limits: { ...defaults, ...(await limitsOf(info, workspaces)) },
        workspace: workspaceOf(info),
        lastUsed: Date.now(),
        inFlight: 0,
      };
      entries.set(agentId, entry);
      return { entry, id: info.Id };
    } catch (e) {
      if (isNotFound(e)) {
        entries.delete(agentId);
        return undefined;
      }
      throw fromDocker(e, 'Looking up the sandbox', { agentId });
    }
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
      const name = agentName(spec.agentId);
      // A pooled workspace has the default size; a file system is not resized on assignment.
      const warm = limits.diskBytes === defaults.diskBytes ? pool.take() : undefined;
      let container: Docker.Container;
      let workspace: WorkspaceMount;
      let opened: Live | undefined;
      if (warm) {
        container = warm.container;
        workspace = warm.workspace;
        opened = warm.live;
        try {
          await container.rename({ name });
          if (JSON.stringify(limits) !== JSON.stringify(defaults))
            await container.update(resourceConfig(limits));
        } catch (e) {
          await closeLive(opened);
          await removeContainer(container).catch(onError);
          throw fromDocker(e, 'Assigning a pooled sandbox', { agentId: spec.agentId });
        }
      } else {
        ({ container, workspace } = await createContainer(
          name,
          {
            ...extraLabels,
            [LABEL_MANAGED]: '1',
            [LABEL_TENANT]: spec.tenantId,
            [LABEL_AGENT]: spec.agentId,
          },
          limits,
        ));
      }
      const entry: Entry = {
        agentId: spec.agentId,
        container,
        limits,
        workspace,
        lastUsed: Date.now(),
        inFlight: 0,
      };
      entries.set(spec.agentId, entry);
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
      const found = await lookup(agentId);
      if (!found) return;
      await detachEntry(found.entry);
      entries.delete(agentId);
      await removeContainer(found.entry.container);
    },
    async close() {
      stopReaper();
      await pool.close();
      for (const entry of entries.values()) await detachEntry(entry);
      entries.clear();
    },
    /**
     * Re-adoption at start: the names of this prefix's agent containers on the engine (get() finds
     * each by name), after removing unassigned pool containers a previous process left behind.
     */
    async adopt() {
      const list = await docker
        .listContainers({ all: true, filters: { label: [`${LABEL_MANAGED}=1`] } })
        .catch((e) => {
          throw fromDocker(e, 'Listing sandboxes');
        });
      const agents = `/${prefix}-agent-`;
      const pooled = `/${prefix}-pool-`;
      const inUse: WorkspaceMount[] = [];
      for (const c of list) {
        const stale = c.Names.some((n) => n.startsWith(pooled)) && c.Labels[LABEL_POOL_OWNER] !== owner;
        if (stale) await removeContainer(docker.getContainer(c.Id)).catch(onError);
        else
          for (const m of c.Mounts ?? [])
            if (m.Destination === WORKSPACE_ROOT) inUse.push({ type: m.Type, source: m.Source });
      }
      // Workspaces whose container is gone (a crash between the two creations, a removal by hand).
      await workspaces.sweep(inUse).catch(onError);
      return list.flatMap((c) => c.Names.filter((n) => n.startsWith(agents)).map((n) => n.slice(1)));
    },
  };
};
