// What one embedded node holds (node.ts), in one object its parts (provision.ts, channel.ts,
// lookup.ts, adopt.ts) take as their first argument: the engine and settings, the agents' sandboxes
// this process knows (Entry), what adopt() found, and the container plumbing every part shares (a
// container made with its workspace and link folder, removed with them, the labels of an agent's
// container).
// Invariants: a container made here carries `ownLabels` (dsh.managed=1, dsh.instance=<instance>
// and the caller's labels) and a name from `names` (ownership.ts); a link folder made for a
// container that failed to be created is removed again; `entries` holds at most one Entry per
// agent, and an Entry keeps its identity while its container is replaced.
import { rm } from 'node:fs/promises';
import type Docker from 'dockerode';
import type { SandboxdChannel, WarmHooks } from '../nodes/types.ts';
import type { SandboxRuntime } from '../runtimes.ts';
import type { SandboxLimits } from '../types.ts';
import { LABEL_AGENT, LABEL_TENANT } from './config.ts';
import { createSandboxContainer, removeSandboxContainer } from './containers.ts';
import { makeLinkDir } from './links.ts';
import type { Naming } from './ownership.ts';
import type { WarmPool } from './pool.ts';
import { engineLimits, type RuntimeCatalog } from './runtimes.ts';
import { seccompFor } from './seccomp.ts';
import type { DiskShare, WorkspaceMount, WorkspaceStore } from './workspaces.ts';

/** One agent's sandbox known to this process. */
export interface Entry {
  agentId: string;
  container: Docker.Container;
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
  /** A stop in progress (open() waits for it). */
  stopping?: Promise<void>;
  /** A pooled container's open channel, nobody's yet (no warm hook): the next open() takes it. */
  pending?: SandboxdChannel;
  /** The runtime its container runs under (a replacement is made under the same one). */
  runtime: SandboxRuntime;
}

/** What the node's user keeps with a pooled sandbox (nodes/types.ts); default: its channel alone. */
export type { WarmHooks };

/** Everything but the warm pool, which is made from it (its first make() runs at once). */
export interface NodeBase {
  docker: Docker;
  image: string;
  prefix: string;
  instance: string;
  names: Naming;
  /** dsh.managed, dsh.instance and the caller's labels: on everything this node makes. */
  ownLabels: Record<string, string>;
  defaults: SandboxLimits;
  /** The most a spec may ask for. */
  maxima: SandboxLimits;
  tmpBytes: number;
  /** The cgroup every sandbox runs under (cgroup.ts), when the operator named one. */
  cgroupParent?: string;
  warm: WarmHooks;
  onError: (error: unknown) => void;
  entries: Map<string, Entry>;
  /** Legacy agent container name → container id, for the ones adopt() found claimed by the store. */
  legacy: Map<string, string>;
  /** This process's pool owner: this instance's pool containers whose owner no longer runs are leftovers. */
  owner: string;
  /**
   * The tenants that asked this node for a sandbox (since start) or hold one here: with two or
   * more, a tenant's further workspace leaves the reserve for the others (provision.ts).
   */
  tenants: Set<string>;
  /** Creates under way per tenant (provision.ts): they count as held. */
  creating: Map<string, number>;
  /**
   * The tenant of each agent container adopt() found and no lookup made an entry of yet (container
   * name → tenant): after a restart they count as held (provision.ts isFurther).
   */
  dormant: Map<string, string>;
  /** Agent container names adopt() found; undefined before adopt() (then any name may exist). */
  adoptedNames: Set<string> | undefined;
  workspaces: WorkspaceStore;
  /** The folder of the containers' link folders; undefined: the attach stream only. */
  links: string | undefined;
  /** The runtimes the engine offers and their engine names. */
  runtimes: RuntimeCatalog;
  /** A stopped agent container of another image is made again from `image` at its next open. */
  rollImage: boolean;
}

export interface NodeState extends NodeBase {
  pool: WarmPool;
}

export interface MadeContainer {
  container: Docker.Container;
  workspace: WorkspaceMount;
  link?: string;
}

/**
 * A new container with its workspace (a new one, a copy of the snapshot `fromSnapshot`, or `reuse`)
 * and, when links are on, its link folder, under `runtime` (default: the engine's default runtime).
 * `share`: a tenant's first or further workspace while other tenants are about (NewContainer.share).
 */
export async function createContainer(
  s: NodeBase,
  name: string,
  labels: Record<string, string>,
  limits: SandboxLimits,
  reuse?: WorkspaceMount,
  runtime?: SandboxRuntime,
  { fromSnapshot, share }: { fromSnapshot?: string; share?: DiskShare } = {},
): Promise<MadeContainer> {
  const engineRuntime = runtime === undefined ? undefined : s.runtimes.engineName(runtime);
  const link = s.links === undefined ? undefined : await makeLinkDir(s.links);
  try {
    const made = await createSandboxContainer(s.docker, s.workspaces, {
      image: s.image,
      name,
      labels,
      limits: engineLimits(runtime, limits),
      tmpBytes: s.tmpBytes,
      ...(s.cgroupParent === undefined ? {} : { cgroupParent: s.cgroupParent }),
      ...(reuse ? { reuse } : {}),
      ...(fromSnapshot === undefined ? {} : { fromSnapshot }),
      ...(share === undefined ? {} : { share }),
      ...(link === undefined ? {} : { link }),
      ...(engineRuntime === undefined ? {} : { runtime: engineRuntime, seccomp: seccompFor(runtime) }),
      // sandboxd puts the image's busybox ls and stat first on PATH under gVisor, whose statx
      // refuses GNU coreutils' flags (sandbox-image/sandboxd/runtime-path.ts); runc: no change.
      ...(runtime === 'gvisor' ? { env: { SANDBOXD_RUNTIME: 'gvisor' } } : {}),
    });
    return link === undefined ? made : { ...made, link };
  } catch (e) {
    if (link !== undefined) await rm(link, { recursive: true, force: true });
    throw e;
  }
}

/** Removes a container with its workspace and link folder; the workspace it had, when it had one. */
export function removeContainer(
  s: NodeBase,
  container: Docker.Container,
): Promise<WorkspaceMount | undefined> {
  return removeSandboxContainer(s.workspaces, container, s.links);
}

/** Removes a container and its workspace; the workspace also when the container is already gone. */
export async function removeWith(
  s: NodeBase,
  container: Docker.Container,
  workspace: WorkspaceMount | undefined,
): Promise<void> {
  await removeContainer(s, container);
  if (workspace) await s.workspaces.remove(workspace);
}

export function agentLabels(
  s: NodeBase,
  agentId: string,
  tenantId: string | undefined,
): Record<string, string> {
  return {
    ...s.ownLabels,
    [LABEL_AGENT]: agentId,
    ...(tenantId === undefined ? {} : { [LABEL_TENANT]: tenantId }),
  };
}
