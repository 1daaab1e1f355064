// Creating and removing one sandbox container with its workspace (workspaces.ts), and naming
// agents' containers. A failed create leaves no workspace behind that it made; removal takes the
// container's workspace with it and treats "already gone" (or going) as done.

import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type Docker from 'dockerode';
import { SandboxError } from '../../errors.ts';
import { WORKSPACE_ROOT } from '../paths.ts';
import type { SandboxLimits } from '../types.ts';
import { containerConfig, DOCKER_DEFAULT_LIMITS, linkDirOf } from './config.ts';
import { dockerMessage, fromDocker, isConflict, isNotFound } from './errors.ts';
import { type DiskShare, type WorkspaceMount, type WorkspaceStore, workspaceOf } from './workspaces.ts';

/** A Docker-safe name part for an agent id: the id itself when it is one, else a hash of it. */
export const agentSlug = (agentId: string): string =>
  /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,80}$/.test(agentId)
    ? agentId
    : `h${createHash('sha256').update(agentId).digest('hex').slice(0, 40)}`;

export interface NewContainer {
  image: string;
  name: string;
  labels: Record<string, string>;
  limits: SandboxLimits;
  tmpBytes: number;
  /** An existing workspace to mount instead of making `<name>-ws` (its container vanished). */
  reuse?: WorkspaceMount;
  /** The container's link folder on this host (config.ts LINK_MOUNT), made before the container. */
  link?: string;
  /** The engine's runtime name (config.ts ContainerSpec.runtime); absent: the engine's default. */
  runtime?: string;
  /** Its seccomp profile (seccomp.ts seccompFor). Default: the runc one. */
  seccomp?: string;
  /** The cgroup every sandbox runs under (config.ts ContainerSpec.cgroupParent). */
  cgroupParent?: string;
  /** Extra environment for sandboxd (config.ts ContainerSpec.env). */
  env?: Record<string, string>;
  /** A snapshot of `workspaces` the new workspace starts as a copy of (WorkspaceStore.create `from`). */
  fromSnapshot?: string;
  /** A tenant's first or further workspace while other tenants are about (WorkspaceStore.create `share`). */
  share?: DiskShare;
}

/**
 * Creates the workspace `<name>-ws` (or takes `reuse`) and the container (not started), both
 * carrying `labels`; the container is created while the workspace's file system is still being made
 * (workspaces.ts `alongside`). A failed create removes only a workspace it made, and the container
 * when the workspace failed after it.
 */
export const createSandboxContainer = async (
  docker: Docker,
  workspaces: WorkspaceStore,
  spec: NewContainer,
): Promise<{ container: Docker.Container; workspace: WorkspaceMount }> => {
  const name = `${spec.name}-ws`;
  const bytes = spec.limits.diskBytes ?? DOCKER_DEFAULT_LIMITS.diskBytes ?? 0;
  /** The container, once made (by `alongside` while the workspace is being made, or after it). */
  const made: { container?: Docker.Container } = {};
  const createContainer = async (mount: Docker.MountSettings): Promise<Docker.Container> => {
    try {
      made.container = await docker.createContainer(containerConfig({ ...spec, workspace: mount }));
      return made.container;
    } catch (e) {
      throw fromDocker(e, 'Creating the sandbox container', { name: spec.name });
    }
  };
  if (spec.reuse) {
    const { type, source } = spec.reuse;
    const container = await createContainer({
      Type: type as Docker.MountType,
      Source: source,
      Target: WORKSPACE_ROOT,
    });
    return { container, workspace: spec.reuse };
  }
  let mount: Docker.MountSettings;
  try {
    mount = await workspaces.create(name, bytes, spec.labels, createContainer, spec.fromSnapshot, spec.share);
  } catch (e) {
    // The workspace failed (and is removed) after its container was made: that goes too.
    await made.container?.remove({ force: true }).catch(() => {});
    throw e;
  }
  const workspace = { type: mount.Type ?? 'volume', source: mount.Source ?? name };
  if (made.container) return { container: made.container, workspace };
  // A store that ignores `alongside` (a volume store) leaves the container to be made after it.
  try {
    return { container: await createContainer(mount), workspace };
  } catch (e) {
    await workspaces.remove(workspace).catch(() => {});
    throw e;
  }
};

/**
 * Force-removes the container and then its workspace, and its link folder when `links` (the
 * provider's folder of link folders) holds it. A removal already in progress (someone else's
 * `docker rm -f`) is waited for, so the workspace goes too.
 */
export const removeSandboxContainer = async (
  workspaces: WorkspaceStore,
  container: Docker.Container,
  links?: string,
): Promise<WorkspaceMount | undefined> => {
  let workspace: WorkspaceMount | undefined;
  try {
    const info = await container.inspect();
    workspace = workspaceOf(info);
    const link = linkDirOf(info);
    await container.remove({ force: true });
    if (links !== undefined && link !== undefined && dirname(link) === links)
      await rm(link, { recursive: true, force: true }).catch(() => {}); // an empty folder at most
  } catch (e) {
    if (isConflict(e) && /already in progress/i.test(dockerMessage(e))) await gone(container);
    else if (!isNotFound(e)) throw fromDocker(e, 'Removing the sandbox', { container: container.id });
  }
  if (workspace) await workspaces.remove(workspace);
  return workspace;
};

/** Resolves once the container no longer exists; fails after `ms`. */
const gone = async (container: Docker.Container, ms = 30_000): Promise<void> => {
  const until = Date.now() + ms;
  for (;;) {
    try {
      await container.inspect();
    } catch (e) {
      if (isNotFound(e)) return;
      throw fromDocker(e, 'Removing the sandbox', { container: container.id });
    }
    if (Date.now() > until)
      throw new SandboxError(
        'SANDBOX_UNAVAILABLE',
        `Removing the sandbox: the engine's removal of ${container.id} did not finish within ${ms} ms.`,
        { data: { container: container.id } },
      );
    await new Promise((r) => setTimeout(r, 100));
  }
};

/** The resource limits a (re-adopted) container actually has. */
export const limitsOf = async (
  info: Docker.ContainerInspectInfo,
  workspaces: WorkspaceStore,
): Promise<Partial<SandboxLimits>> => {
  const h = info.HostConfig as { Memory?: number; NanoCpus?: number; PidsLimit?: number };
  const workspace = workspaceOf(info);
  const diskBytes = workspace ? await workspaces.limitOf(workspace) : undefined;
  return {
    ...(h.Memory ? { memoryBytes: h.Memory } : {}),
    ...(h.NanoCpus ? { nanoCpus: h.NanoCpus } : {}),
    ...(h.PidsLimit ? { pids: h.PidsLimit } : {}),
    ...(diskBytes ? { diskBytes } : {}),
  };
};
