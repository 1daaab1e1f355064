// The sandboxes' side of a restore and an image upgrade, on the real engine: a new provider (a
// restarted service) whose store, restored to an older point, does not know an agent removes that
// agent's container and workspace at adopt() and keeps the known one; and with rollImage, an agent
// whose stopped container was made from the previous image gets one from the new image on its
// workspace at its next use, while a running container keeps its image.
import { afterAll, describe, expect, it } from 'vitest';
import { createLoopWorkspaces } from '../../../host/sandbox/docker/index.ts';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { dockerFixture, sandboxImage } from './fixtures.ts';

const fx = dockerFixture();
// The previous release's image: the same image under a tag of this run (removed afterwards).
const OLD = `dsht-old-${fx.runId}:prev`;
afterAll(async () => {
  await fx.sweep();
  await fx.docker
    .getImage(OLD)
    .remove({ noprune: true })
    .catch(() => {});
});

const read = async (sb: Sandbox | undefined, path: string) => (await sb?.fs.readFile(path))?.toString();
const imageOf = async (id: string) => (await fx.docker.getContainer(id).inspect()).Config.Image;

describe('sandboxes after a restore and an image upgrade', () => {
  it('reclaims the container of an agent the restored store does not know, keeps the known one', async () => {
    const before = fx.provider();
    const known = await before.create({ tenantId: 't', agentId: 'known' });
    const later = await before.create({ tenantId: 't', agentId: 'made-after-backup' });
    const lost = await before.create({ tenantId: 't', agentId: 'container-lost' });
    await known.fs.writeFile('k.txt', 'kept');
    await before.close(); // containers stay for re-adoption, as at a restart
    // A known agent whose container went while the service was down (another engine, by hand).
    await fx.docker.getContainer(lost.id).remove({ force: true });

    // A new process: its own workspace store on the same folder (it did not make the old ones).
    const after = fx.provider(
      fx.workspacesDir === undefined ? {} : { workspaces: createLoopWorkspaces(fx.workspacesDir) },
    );
    // As if the store was read two minutes from now: the containers are older than the read by more
    // than the minute ownership.ts allows for clocks.
    const adopted = await after.adopt({ known: ['known', 'container-lost'], knownAt: Date.now() + 120_000 });
    expect(adopted).toEqual([expect.stringContaining('agent-known')]);
    await expect(fx.docker.getContainer(later.id).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect(await read(await after.get('known'), 'k.txt')).toBe('kept');
    // It gets a fresh container at its next use (a loop workspace was swept at start: empty).
    expect(await after.get('container-lost')).toBeUndefined();
    const fresh = await after.create({ tenantId: 't', agentId: 'container-lost' });
    expect((await fresh.exec('echo up')).stdout).toBe('up\n');
    if (fx.workspacesDir !== undefined)
      expect((await fresh.exec('ls -A /workspace | wc -l')).stdout.trim()).toBe('0');
    await after.close();
  });

  it('rolls a stopped container of the previous image to the new one at its next use, files kept', async () => {
    await fx.docker.getImage(sandboxImage()).tag({ repo: `dsht-old-${fx.runId}`, tag: 'prev' });
    const old = fx.provider({ image: OLD });
    const idle = await old.create({ tenantId: 't', agentId: 'idle' });
    const busy = await old.create({ tenantId: 't', agentId: 'busy' });
    await idle.fs.writeFile('notes.md', 'from the old image');
    await busy.fs.writeFile('b.txt', 'busy');
    await fx.docker.getContainer(idle.id).stop({ t: 1 }); // as the idle reaper stops it
    await old.close();

    const errors: string[] = [];
    const upgraded = fx.provider({ rollImage: true, onError: (e) => errors.push(String(e)) });
    await upgraded.adopt({});
    const rolled = await upgraded.get('idle');
    expect(await read(rolled, 'notes.md')).toBe('from the old image');
    expect((await rolled?.exec('echo up'))?.stdout).toBe('up\n');
    const now = (await upgraded.get('idle'))?.id ?? '';
    expect(now).not.toBe(idle.id);
    expect(await imageOf(now)).toBe(sandboxImage());
    expect(errors.join('\n')).toMatch(/agent idle was made from .*:prev.*files kept/);
    // Running: left on its image, still serving.
    const running = await upgraded.get('busy');
    expect(await read(running, 'b.txt')).toBe('busy');
    expect(running?.id).toBe(busy.id);
    expect(await imageOf(busy.id)).toBe(OLD);
    // A new agent gets the new image.
    const fresh = await upgraded.create({ tenantId: 't', agentId: 'fresh' });
    expect(await imageOf(fresh.id)).toBe(sandboxImage());
    await upgraded.close();
  });
});
