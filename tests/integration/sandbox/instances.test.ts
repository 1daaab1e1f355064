// Several control planes on one Docker engine (issue 10 §2): each instance (its own store, so its
// own instance id) owns only what it created. One instance restarting (close, new provider,
// adopt) while the other creates agents and calls tools loses nothing of either; and a sandbox
// that vanished behind the provider's back (removed by hand) is replaced transparently.

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createDockerProvider,
  createLoopWorkspaces,
  createVolumeWorkspaces,
  type DockerProvider,
  type WorkspaceStore,
} from '../../../host/sandbox/docker/index.ts';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { openStore } from '../../../host/store/index.ts';
import { dockerFixture, loopWorkspaces } from './fixtures.ts';

const fx = dockerFixture();
// Both instances use the same name prefix, as two services with default settings do ('dsh').
const prefix = `dsht-${fx.runId}`;
// One workspace folder for both: the harder case (an operator may point both at one disk); the
// default, a folder per data directory, cannot mix them at all.
const sharedDir = loopWorkspaces ? join(tmpdir(), `dsh-ws-${fx.runId}-shared`) : undefined;
const stores: WorkspaceStore[] = [];
const dataDirs: string[] = [];

afterAll(async () => {
  await fx.sweep();
  for (const ws of stores) await ws.sweep([], true);
  if (sharedDir) await rmdir(sharedDir).catch(() => {});
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

/** Background failures of every provider here: a healthy run has none. */
const errors: string[] = [];

/** One control plane: its own store (so its own instance id), restartable. */
const instance = () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'dsh-instance-'));
  dataDirs.push(dataDir);
  const store = openStore({ dataDir });
  const id = store.instanceId;
  store.close();
  return {
    id,
    /** A fresh process of this instance: a new provider (and workspace store object), adopted. */
    async start(): Promise<DockerProvider> {
      // The store is reopened as a restarted service would: the id is the one it keeps.
      const reopened = openStore({ dataDir });
      expect(reopened.instanceId).toBe(id);
      reopened.close();
      const workspaces = sharedDir ? createLoopWorkspaces(sharedDir) : createVolumeWorkspaces(fx.docker);
      stores.push(workspaces);
      const provider = createDockerProvider({
        ...fx.options(),
        prefix,
        instance: id,
        workspaces,
        pool: { size: 1 },
        onError: (e) => errors.push(String(e)),
      });
      fx.closeLater(provider);
      await provider.adopt();
      return provider;
    },
  };
};

const containersOf = async (instanceId: string, pool = false) =>
  (
    await fx.docker.listContainers({
      all: true,
      filters: {
        label: [`dsh.test=${fx.runId}`, `dsh.instance=${instanceId}`, ...(pool ? ['dsh.pool=1'] : [])],
      },
    })
  )
    .filter((c) => !pool || c.Names.some((n) => n.includes('-pool-')))
    .map((c) => c.Id);
const poolOf = (instanceId: string) => containersOf(instanceId, true);

const read = async (sb: Sandbox | undefined, path: string) => (await sb?.fs.readFile(path))?.toString();

describe('two control planes on one engine', () => {
  it('each keeps its agents, files and pool while the other restarts', async () => {
    const a = instance();
    const b = instance();
    expect(a.id).not.toBe(b.id);
    let pa = await a.start();
    let pb = await b.start();
    await Promise.all([pa.pool.filled(), pb.pool.filled()]);

    // The same agent id in both: the names do not clash and each sees only its own sandbox.
    await (await pa.create({ tenantId: 't', agentId: 'same' })).fs.writeFile('who.txt', 'a');
    await (await pb.create({ tenantId: 't', agentId: 'same' })).fs.writeFile('who.txt', 'b');
    expect(await read(await pa.get('same'), 'who.txt')).toBe('a');
    expect(await read(await pb.get('same'), 'who.txt')).toBe('b');

    /** Agents made from the pool (or cold), each writing a file and running a command. */
    const work = async (provider: () => DockerProvider, tag: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const sb = await provider().create({ tenantId: 't', agentId: `${tag}${i}` });
        await sb.fs.writeFile('mine.txt', `${tag}${i}`);
        expect((await sb.exec('cat mine.txt')).stdout).toBe(`${tag}${i}`);
      }
    };
    const restart = async (inst: ReturnType<typeof instance>, current: DockerProvider) => {
      await current.close();
      return inst.start();
    };

    // A works while B restarts; then B works while A restarts. The restarting one's adopt() and
    // workspace sweep remove nothing of the other's (its pool included, assigned or not).
    await pa.pool.filled();
    expect(await poolOf(a.id)).toHaveLength(1);
    const ofA = await containersOf(a.id);
    await Promise.all([
      work(() => pa, 'a', 3),
      restart(b, pb).then((next) => {
        pb = next;
      }),
    ]);
    expect(await containersOf(a.id)).toEqual(expect.arrayContaining(ofA));
    await pb.pool.filled();
    expect(await poolOf(b.id)).toHaveLength(1);
    const ofB = await containersOf(b.id);
    await Promise.all([
      work(() => pb, 'b', 3),
      restart(a, pa).then((next) => {
        pa = next;
      }),
    ]);
    expect(await containersOf(b.id)).toEqual(expect.arrayContaining(ofB));

    // Nothing of either is lost: every agent's files, through the restarted providers.
    expect(await read(await pa.get('same'), 'who.txt')).toBe('a');
    expect(await read(await pb.get('same'), 'who.txt')).toBe('b');
    for (let i = 0; i < 3; i++) {
      expect(await read(await pa.get(`a${i}`), 'mine.txt')).toBe(`a${i}`);
      expect(await read(await pb.get(`b${i}`), 'mine.txt')).toBe(`b${i}`);
    }
    // The incident itself: one instance idle with a ready pool while the other restarts; its next
    // agent still gets its own pooled container (today's main removed it: "No such container").
    for (const [idle, restarting] of [
      ['a', 'b'],
      ['b', 'a'],
    ] as const) {
      const provider = () => (idle === 'a' ? pa : pb);
      await provider().pool.filled();
      const ready = (
        await fx.docker.listContainers({
          all: true,
          filters: { label: [`dsh.test=${fx.runId}`, 'dsh.pool=1'] },
        })
      ).map((c) => c.Id);
      if (restarting === 'b') pb = await restart(b, pb);
      else pa = await restart(a, pa);
      const sb = await provider().create({ tenantId: 't', agentId: `${idle}-late` });
      expect(ready).toContain(sb.id);
      expect((await sb.exec('echo ok')).stdout).toBe('ok\n');
    }
    expect(errors).toEqual([]);
    await pa.close();
    await pb.close();
  });
});

describe('a sandbox that vanished', () => {
  it('a pooled container removed by hand is replaced transparently, its workspace cleaned up', async () => {
    const provider = fx.provider({ pool: { size: 1 } });
    await provider.pool.filled();
    const [gone] = (
      await fx.docker.listContainers({
        all: true,
        filters: { label: [`dsh.test=${fx.runId}`, 'dsh.pool=1'] },
      })
    ).map((c) => c.Id);
    expect(gone).toBeDefined();
    const mount = (await fx.docker.getContainer(gone ?? '').inspect()).Mounts.find(
      (m) => m.Destination === '/workspace',
    );
    await fx.docker.getContainer(gone ?? '').remove({ force: true });

    const sb = await provider.create({ tenantId: 't', agentId: 'after-removal' });
    expect(sb.id).not.toBe(gone);
    await sb.fs.writeFile('x.txt', 'works');
    expect(await read(sb, 'x.txt')).toBe('works');
    await provider.pool.filled();
    expect(provider.pool.ready).toBe(1);
    if (loopWorkspaces)
      await expect.poll(() => existsSync(`${mount?.Source}.img`), { timeout: 15_000 }).toBe(false);
    await provider.close();
  });

  it("an agent's container removed by hand is made again on its next call, with the agent's files", async () => {
    const errors: string[] = [];
    const provider = fx.provider({ onError: (e) => errors.push(String(e)) });
    const sb = await provider.create({ tenantId: 't', agentId: 'removed-by-hand' });
    await sb.fs.writeFile('keep.txt', 'kept');
    await fx.docker.getContainer(sb.id).remove({ force: true });

    expect(await read(sb, 'keep.txt')).toBe('kept');
    expect((await sb.exec('echo alive')).stdout).toBe('alive\n');
    const again = await provider.get('removed-by-hand');
    expect(again?.id).toBeDefined();
    expect(again?.id).not.toBe(sb.id);
    expect(errors.join('\n')).toMatch(/removed-by-hand was gone .*files kept/);
    await provider.destroy('removed-by-hand');
    // A destroyed agent's old handle never brings a container back.
    await expect(sb.exec('true')).rejects.toThrow(/was destroyed/);
    expect(await provider.get('removed-by-hand')).toBeUndefined();
    await provider.close();
  });
});
