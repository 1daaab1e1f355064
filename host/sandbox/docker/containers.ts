// Creating and removing one sandbox container with its workspace (workspaces.ts), and naming
// agents' containers. A failed create leaves no workspace behind; removal takes the container's
// workspace with it and treats "already gone" as done.

import { createHash } from 'node:crypto';
import type Docker from 'dockerode';
import type { SandboxLimits } from '../types.ts';
import { containerConfig, DOCKER_DEFAULT_LIMITS } from './config.ts';
import { fromDocker, isNotFound } from './errors.ts';
import { type WorkspaceMount, type WorkspaceStore, workspaceOf } from './workspaces.ts';

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
}

/** Creates the workspace `<name>-ws` and the container (not started), both carrying `labels`. */
export const createSandboxContainer = async (
  docker: Docker,
  workspaces: WorkspaceStore,
  spec: NewContainer,
): Promise<{ container: Docker.Container; workspace: WorkspaceMount }> => {
  const name = `${spec.name}-ws`;
  const bytes = spec.limits.diskBytes ?? DOCKER_DEFAULT_LIMITS.diskBytes ?? 0;
  const mount = await workspaces.create(name, bytes, spec.labels);
  const workspace = { type: mount.Type ?? 'volume', source: mount.Source ?? name };
  try {
    const container = await docker.createContainer(containerConfig({ ...spec, workspace: mount }));
    return { container, workspace };
  } catch (e) {
    await workspaces.remove(workspace).catch(() => {});
    throw fromDocker(e, 'Creating the sandbox container', { name: spec.name });
  }
};

/** Force-removes the container and then its workspace. */
export const removeSandboxContainer = async (
  workspaces: WorkspaceStore,
  container: Docker.Container,
): Promise<WorkspaceMount | undefined> => {
  let workspace: WorkspaceMount | undefined;
  try {
    workspace = workspaceOf(await container.inspect());
    await container.remove({ force: true });
  } catch (e) {
    if (!isNotFound(e)) throw fromDocker(e, 'Removing the sandbox', { container: container.id });
  }
  if (workspace) await workspaces.remove(workspace);
  return workspace;
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
