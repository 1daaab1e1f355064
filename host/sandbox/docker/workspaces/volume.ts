// Volume workspaces: a plain Docker named volume each, no size limit. For engines the control
// plane cannot mount for (remote, rootless), and only when the operator turns the quota off
// (DSH_DISK_QUOTA=off); the provider's default when it is given no store. A volume carries no proof
// of whose it is, so this store owns and sweeps none (the provider removes volumes by label).

import type Docker from 'dockerode';
import { SandboxError } from '../../../errors.ts';
import { WORKSPACE_ROOT } from '../../paths.ts';
import { fromDocker, isNotFound } from '../errors.ts';
import type { WorkspaceMount, WorkspaceStore } from '../workspaces.ts';

export function createVolumeWorkspaces(docker: Docker): WorkspaceStore {
  async function create(
    name: string,
    _bytes: number,
    labels: Record<string, string>,
    _alongside?: unknown,
    from?: string,
  ): Promise<Docker.MountSettings> {
    if (from !== undefined)
      throw new SandboxError(
        'SNAPSHOT_UNSUPPORTED',
        'Workspaces here are Docker volumes without a size limit (DSH_DISK_QUOTA=off): they have no snapshots.',
      );
    await docker.createVolume({ Name: name, Labels: labels }).catch((e) => {
      throw fromDocker(e, 'Creating the sandbox volume', { volume: name });
    });
    return { Type: 'volume', Source: name, Target: WORKSPACE_ROOT, ReadOnly: false };
  }

  async function remove(mount: WorkspaceMount): Promise<void> {
    if (mount.type !== 'volume' || mount.source === '') return;
    await docker
      .getVolume(mount.source)
      .remove()
      .catch((e) => {
        if (!isNotFound(e)) throw fromDocker(e, 'Removing the sandbox volume', { volume: mount.source });
      });
  }

  async function exists(mount: WorkspaceMount): Promise<boolean> {
    if (mount.type !== 'volume' || mount.source === '') return false;
    try {
      await docker.getVolume(mount.source).inspect();
      return true;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw fromDocker(e, 'Inspecting the sandbox volume', { volume: mount.source });
    }
  }

  return {
    kind: 'volume',
    create,
    ready: async () => {},
    remove,
    limitOf: async () => undefined,
    usage: async () => undefined,
    exists,
    owns: () => false,
    sweep: async () => 0,
  };
}
