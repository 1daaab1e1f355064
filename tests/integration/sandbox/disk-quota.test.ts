// The workspace disk limit: every agent's /workspace is its own file system of `diskBytes`, so an
// agent that fills its disk fails its own writes and nobody else's, the host's disk is untouched,
// freed space goes back to the host, and the workspace survives being unmounted (a reboot).

import { execFileSync } from 'node:child_process';
import { mkdirSync, rmdirSync, statSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoopWorkspaces } from '../../../host/sandbox/docker/index.ts';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { codeOf } from '../../contract/sandbox/suite.ts';
import { dockerFixture, loopWorkspaces } from './fixtures.ts';

const MiB = 1024 * 1024;
const fx = dockerFixture();
const provider = fx.provider();
let small: Sandbox;
let neighbour: Sandbox;

const sh = async (sb: Sandbox, command: string) => {
  const r = await sb.exec(command, { timeoutMs: 60_000 });
  return { code: r.exitCode, out: `${r.stdout}${r.stderr}` };
};
const imageOf = async (sb: Sandbox): Promise<string> => {
  const mount = (await fx.docker.getContainer(sb.id).inspect()).Mounts.find(
    (m) => m.Destination === '/workspace',
  );
  return `${mount?.Source}.img`;
};

beforeAll(async () => {
  [small, neighbour] = await Promise.all([
    provider.create({ tenantId: 't1', agentId: 'small', limits: { diskBytes: 64 * MiB } }),
    provider.create({ tenantId: 't2', agentId: 'neighbour' }),
  ]);
}, 60_000);
afterAll(async () => {
  await provider.close();
  await fx.sweep();
});

describe.skipIf(!loopWorkspaces)('workspace disk limit (loop-mounted file system per agent)', () => {
  it('shows the agent a workspace of its own size, empty and owned by it', async () => {
    const { out } = await sh(
      small,
      'df -B1 --output=size /workspace | tail -1; ls -A /workspace; stat -c %U /workspace',
    );
    const [size, owner] = out.trim().split('\n');
    expect(Number(size)).toBeGreaterThan(40 * MiB);
    expect(Number(size)).toBeLessThanOrEqual(64 * MiB);
    expect(owner).toBe('agent');
  });

  it('refuses writes past the limit inside that agent only, with a clear error', async () => {
    const dd = await sh(small, 'dd if=/dev/zero of=/workspace/fill bs=1M count=200 2>&1; echo "rc=$?"');
    expect(dd.out).toMatch(/No space left on device/);
    expect(dd.out).toMatch(/rc=1/);
    const fill = await sh(small, 'fallocate -l 200M /workspace/big; echo "rc=$?"');
    expect(fill.out).toMatch(/No space left on device/);
    // The file tools see the same limit, as a stable code.
    expect(await codeOf(small.fs.writeFile('more.bin', Buffer.alloc(4 * MiB)))).toBe('DISK_FULL');
    // The neighbour, and the host's disk behind it, are untouched.
    await neighbour.fs.writeFile('ok.txt', 'still writable');
    expect((await neighbour.fs.readFile('ok.txt')).toString()).toBe('still writable');
    // What the host's disk holds for this agent is bounded by the limit (after the page cache is flushed).
    await sh(small, 'sync');
    const held = statSync(await imageOf(small)).blocks * 512;
    expect(held).toBeGreaterThan(40 * MiB);
    expect(held).toBeLessThanOrEqual(70 * MiB);
  });

  it('gives deleted space back to the agent and to the host', { timeout: 60_000 }, async () => {
    const image = await imageOf(small);
    const before = statSync(image).blocks * 512;
    expect((await sh(small, 'rm -f /workspace/fill /workspace/big && echo gone')).out).toContain('gone');
    // ext4 discards freed blocks when the journal commits (every few seconds): the image shrinks then.
    let after = before;
    for (let i = 0; i < 100 && after > before - 32 * MiB; i++) {
      await sh(small, 'sync');
      await new Promise((r) => setTimeout(r, 200));
      after = statSync(image).blocks * 512;
    }
    expect(after).toBeLessThan(before - 32 * MiB);
    await small.fs.writeFile('after.txt', 'room again');
    expect((await small.fs.readFile('after.txt')).toString()).toBe('room again');
  });

  it('remounts the workspace, contents intact, when the container restarts after it was unmounted', async () => {
    await small.fs.writeFile('keep.txt', 'survives a reboot');
    const mount = (await fx.docker.getContainer(small.id).inspect()).Mounts.find(
      (m) => m.Destination === '/workspace',
    );
    await fx.docker.getContainer(small.id).stop({ t: 1 });
    execFileSync('umount', [mount?.Source ?? '']);
    // The next call restarts the container; the provider mounts the workspace first.
    expect((await small.fs.readFile('keep.txt')).toString()).toBe('survives a reboot');
  }, 60_000);

  it('refuses a workspace above the maximum at create time', async () => {
    expect(
      await codeOf(provider.create({ tenantId: 't1', agentId: 'huge', limits: { diskBytes: 2 ** 50 } })),
    ).toBe('LIMIT_EXCEEDED');
  });
  it('refuses a workspace the host disk could not hold once every workspace grew to its limit', async () => {
    const dir = join(tmpdir(), `dsh-ws-admit-${fx.runId}`);
    mkdirSync(dir, { recursive: true });
    const s = await statfs(dir);
    const GiB = 1024 ** 3;
    // Leave exactly 1 GiB of room for workspace growth (the images are sparse: nothing is written).
    const store = createLoopWorkspaces(dir, { reserveBytes: s.bavail * s.bsize - GiB });
    try {
      const first = await store.create('first', GiB / 2, {});
      expect(await codeOf(store.create('second', GiB, {}))).toBe('CAPACITY_EXCEEDED');
      await store.remove({ type: 'bind', source: first.Source ?? '' });
      await store.create('second', GiB / 2, {});
    } finally {
      await store.sweep([], true);
      rmdirSync(dir);
    }
  });
});
