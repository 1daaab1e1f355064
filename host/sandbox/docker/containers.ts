// Creating and removing one sandbox container with its workspace volume, and naming agents'
// containers. A failed create leaves no volume behind; removal takes the container's volumes with it
// and treats "already gone" as done.

import { createHash } from 'node:crypto';
import type Docker from 'dockerode';
import type { SandboxLimits } from '../types.ts';
import { containerConfig } from './config.ts';
import { fromDocker, isNotFound } from './errors.ts';

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

/** Creates the volume `<name>-ws` and the container (not started), both carrying `labels`. */
export const createSandboxContainer = async (
  docker: Docker,
  spec: NewContainer,
): Promise<Docker.Container> => {
  const volume = `${spec.name}-ws`;
  try {
    await docker.createVolume({ Name: volume, Labels: spec.labels });
    return await docker.createContainer(containerConfig({ ...spec, volume }));
  } catch (e) {
    await docker
      .getVolume(volume)
      .remove()
      .catch(() => {});
    throw fromDocker(e, 'Creating the sandbox container', { name: spec.name });
  }
};

/** Force-removes the container and then its named volumes. */
export const removeSandboxContainer = async (docker: Docker, container: Docker.Container): Promise<void> => {
  let volumes: string[] = [];
  try {
    const info = await container.inspect();
    volumes = (info.Mounts ?? []).filter((m) => m.Type === 'volume' && m.Name).map((m) => m.Name as string);
    await container.remove({ force: true });
  } catch (e) {
    if (!isNotFound(e)) throw fromDocker(e, 'Removing the sandbox', { container: container.id });
  }
  for (const v of volumes) {
    await docker
      .getVolume(v)
      .remove()
      .catch((e) => {
        if (!isNotFound(e)) throw fromDocker(e, 'Removing the sandbox volume', { volume: v });
      });
  }
};

/** The resource limits a (re-adopted) container actually has. */
export const limitsOf = (info: Docker.ContainerInspectInfo): Partial<SandboxLimits> => {
  const h = info.HostConfig as { Memory?: number; NanoCpus?: number; PidsLimit?: number };
  return {
    ...(h.Memory ? { memoryBytes: h.Memory } : {}),
    ...(h.NanoCpus ? { nanoCpus: h.NanoCpus } : {}),
    ...(h.PidsLimit ? { pids: h.PidsLimit } : {}),
  };
};
