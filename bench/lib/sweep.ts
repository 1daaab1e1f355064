// A bench run's id and image, and removing what one bench run made in Docker: every container and volume carrying its
// `dsh.bench=<run>` label, and nothing else (other runs and the service's own are left alone).
import type Docker from 'dockerode';
import { nanoid } from 'nanoid';

/** A bench run's id: lowercase letters and digits, for its `dsh.bench` label and instance names. */
export const benchRunId = (): string =>
  nanoid(6)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, 'x');

/** The sandbox image: DSH_SANDBOX_IMAGE, else the one this checkout builds (made if missing). */
export const benchImage = async (): Promise<string> =>
  process.env.DSH_SANDBOX_IMAGE ??
  (await (await import('../../scripts/setup/image.ts')).ensureSandboxImage()).tag;

export const removeBenchResources = (docker: Docker, run: string): Promise<void> =>
  removeLabelled(docker, `dsh.bench=${run}`);

/** Removes every container (with its anonymous volumes) and volume carrying `label` (`key=value`). */
export async function removeLabelled(docker: Docker, label: string): Promise<void> {
  const filters = { label: [label] };
  for (const c of await docker.listContainers({ all: true, filters }))
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => {});
  for (const v of (await docker.listVolumes({ filters })).Volumes ?? [])
    await docker
      .getVolume(v.Name)
      .remove()
      .catch(() => {});
}
