// Removes what one bench run made in Docker: every container and volume carrying its
// `dsh.bench=<run>` label, and nothing else (other runs and the service's own are left alone).
import type Docker from 'dockerode';

export async function removeBenchResources(docker: Docker, run: string): Promise<void> {
  const filters = { label: [`dsh.bench=${run}`] };
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
