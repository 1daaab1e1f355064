// Docker provider lifecycle, independent of sandboxd's features (a ping-only session stands in):
// warm pool, cold create, limits within maxima, re-adoption after a restart, idle reaper, destroy.

import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { codeOf } from '../../contract/sandbox/suite.ts';
import { until } from '../../helpers/until.ts';
import { dockerFixture, pingOnlyConnect } from './fixtures.ts';

const fx = dockerFixture();
afterAll(() => fx.sweep());

const state = async (id: string) => (await fx.docker.getContainer(id).inspect()).State;

/** Ids of this run's containers still waiting in a pool (not yet handed to an agent). */
const pooledContainers = async (): Promise<string[]> =>
  (await fx.docker.listContainers({ all: true, filters: { label: [`dsh.test=${fx.runId}`, 'dsh.pool=1'] } }))
    .filter((c) => c.Names[0]?.includes('-pool-'))
    .map((c) => c.Id);

describe('docker provider lifecycle', () => {
  // How much faster than a cold create that is: bench/sandbox.ts (agent ready from the warm pool).
  it('hands out the warm pooled container and refills the pool', async () => {
    const provider = fx.provider({ connect: pingOnlyConnect, pool: { size: 1 } });
    await provider.pool.filled();
    expect(provider.pool.ready).toBe(1);
    const [waiting] = await pooledContainers();
    const sb = await provider.create({ tenantId: 't', agentId: 'pooled' });
    expect(sb.id).toBe(waiting); // the container that was waiting in the pool, not a new one
    // Renamed after the agent is ready (off its path), so `docker ps` soon shows whose it is.
    const name = `/dsht-${fx.runId}-agent-pooled`;
    await until(async () => (await fx.docker.getContainer(sb.id).inspect()).Name === name, {
      what: 'the pooled container renamed for its agent',
    });
    expect((await state(sb.id)).Running).toBe(true);
    await provider.pool.filled();
    expect(provider.pool.ready).toBe(1);
    await provider.close();
    // close() removes unassigned pool containers but keeps agents' sandboxes running.
    const left = await fx.docker.listContainers({
      all: true,
      filters: { label: [`dsh.test=${fx.runId}`, 'dsh.pool=1'] },
    });
    expect(left.map((c) => c.Names[0])).toEqual([`/dsht-${fx.runId}-agent-pooled`]);
  });

  it('applies per-agent limits to a pooled container and refuses limits above the maxima', async () => {
    const provider = fx.provider({
      connect: pingOnlyConnect,
      pool: { size: 1 },
      maxima: { memoryBytes: 1024 * 1024 * 1024 },
    });
    await provider.pool.filled();
    const sb = await provider.create({
      tenantId: 't',
      agentId: 'limited',
      limits: { memoryBytes: 300 * 1024 * 1024, pids: 99 },
    });
    const host = (await fx.docker.getContainer(sb.id).inspect()).HostConfig;
    expect([host.Memory, host.MemorySwap, host.PidsLimit]).toEqual([
      300 * 1024 * 1024,
      300 * 1024 * 1024,
      99,
    ]);
    expect(
      await codeOf(
        provider.create({
          tenantId: 't',
          agentId: 'greedy',
          limits: { memoryBytes: 2 * 1024 * 1024 * 1024 },
        }),
      ),
    ).toBe('LIMIT_EXCEEDED');
    expect(await provider.get('greedy')).toBeUndefined();
    await provider.close();
  });

  it('re-adopts agents after a control-plane restart, and destroy removes container and volume', async () => {
    const first = fx.provider({ connect: pingOnlyConnect });
    const sb = await first.create({ tenantId: 't', agentId: 'agent/with:odd chars' });
    await first.close();
    expect((await state(sb.id)).Running).toBe(true);

    const second = fx.provider({ connect: pingOnlyConnect });
    expect(await second.adopt()).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`^dsht-${fx.runId}-agent-h[0-9a-f]{40}$`))]),
    );
    const again = await second.get('agent/with:odd chars');
    expect(again?.id).toBe(sb.id);
    expect(await second.get('nobody')).toBeUndefined();
    const mount = (await fx.docker.getContainer(sb.id).inspect()).Mounts.find(
      (m) => m.Destination === '/workspace',
    );
    await second.destroy('agent/with:odd chars');
    expect(await second.get('agent/with:odd chars')).toBeUndefined();
    expect(await codeOf(fx.docker.getContainer(sb.id).inspect())).toBeDefined();
    const { Volumes } = await fx.docker.listVolumes({ filters: { label: [`dsh.test=${fx.runId}`] } });
    expect((Volumes ?? []).map((v) => v.Name)).not.toContain(mount?.Name);
    if (fx.workspacesDir) {
      expect(existsSync(`${mount?.Source}.img`)).toBe(false);
      expect(existsSync(mount?.Source ?? '')).toBe(false);
    }
    await second.destroy('agent/with:odd chars'); // idempotent
    await second.close();
  });

  it('stops idle sandboxes and restarts them on the next call', async () => {
    let connects = 0;
    const provider = fx.provider({
      idleMs: 500,
      connect: (o) => {
        connects++;
        return { ...pingOnlyConnect(o), jobs: { list: async () => [] } } as never;
      },
    });
    const sb = await provider.create({ tenantId: 't', agentId: 'sleepy' });
    await expect
      .poll(async () => (await state(sb.id)).Running, { timeout: 15_000, interval: 250 })
      .toBe(false);
    await sb.fs.stat('.').catch(() => {}); // any call revives it (the ping-only session refuses the call itself)
    expect((await state(sb.id)).Running).toBe(true);
    expect(connects).toBe(2);
    await provider.close();
  });
});

describe('docker provider lifecycle with sandboxd', () => {
  it('never reaps a sandbox in the middle of a call, and resumes after reaping', async () => {
    const provider = fx.provider({ idleMs: 400 });
    const sb = await provider.create({ tenantId: 't', agentId: 'busy' });
    const r = await sb.exec('sleep 2; echo done');
    expect(r.stdout).toBe('done\n');
    await expect
      .poll(async () => (await state(sb.id)).Running, { timeout: 15_000, interval: 200 })
      .toBe(false);
    expect((await sb.exec('echo back')).stdout).toBe('back\n');
    await provider.destroy('busy');
    await provider.close();
  });

  it('removes pool containers a previous process left behind, on adopt()', async () => {
    const crashed = fx.provider({ pool: { size: 1 } });
    await crashed.pool.filled();
    const leftover = await pooledContainers();
    expect(leftover).toHaveLength(1);
    // no close(): as if the process died (it still runs here, so it may make another one later)
    const next = fx.provider();
    await next.adopt();
    expect(await pooledContainers()).not.toContain(leftover[0]);
    await next.close();
    await crashed.close();
  });
});

describe('control-plane restart', () => {
  it('keeps a pooled sandbox its agent got just before a crash (the rename never happened)', async () => {
    const crashed = fx.provider({ pool: { size: 1 } });
    await crashed.pool.filled();
    const sb = await crashed.create({ tenantId: 't', agentId: 'early' });
    await sb.fs.writeFile('kept.txt', Buffer.from('mine'));
    // As if the process died between handing the container out and renaming it: the store had
    // recorded it as the agent's sandbox (the service does so before the agent's first call).
    const container = fx.docker.getContainer(sb.id);
    await until(async () => (await container.inspect()).Name.includes('-agent-'), { what: 'the rename' });
    await container.rename({ name: `dsht-${fx.runId}-pool-crashed` });
    await crashed.close(); // its session ends as the process's would; close() leaves agents' containers

    const next = fx.provider();
    await next.adopt({ claim: [sb.id], assigned: new Map([[sb.id, 'early']]) });
    const again = await next.get('early');
    expect(again?.id).toBe(sb.id);
    expect((await again?.fs.readFile('kept.txt'))?.toString()).toBe('mine');
    expect((await container.inspect()).Name).toBe(`/dsht-${fx.runId}-agent-early`);
    await next.destroy('early');
    await next.close();
  });

  it('keeps files and background jobs: a new provider re-adopts the agent and reads the job it did not start', async () => {
    const first = fx.provider();
    const sb = await first.create({ tenantId: 't', agentId: 'durable' });
    await sb.fs.writeFile('kept.txt', 'still here');
    const job = await sb.jobs.start('echo started; sleep 1; echo finished');
    await first.close();

    const second = fx.provider();
    expect(await second.adopt()).toContain(`dsht-${fx.runId}-agent-durable`);
    const again = await second.get('durable');
    expect(again?.id).toBe(sb.id);
    expect((await again?.fs.readFile('kept.txt'))?.toString()).toBe('still here');
    expect((await again?.jobs.list())?.map((j) => j.id)).toContain(job.id);
    const out = await again?.jobs.output(job.id, { wait: true, timeoutMs: 15_000 });
    expect(out).toMatchObject({ status: 'exited', exitCode: 0, output: 'started\nfinished\n' });
    await second.destroy('durable');
    await second.close();
  });
});
