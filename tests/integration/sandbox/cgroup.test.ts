// DSH_SANDBOX_CGROUP on the real engine (host/sandbox/docker/cgroup.ts): every sandbox runs under
// the one cgroup, whose memory limit holds for all of them together. Two sandboxes whose own limits
// (256 MiB each) add up past the cgroup's (300 MiB): when the second allocates 200 MB while the
// first holds 200 MB, the kernel ends the largest process inside the cgroup (the first's), the
// second's allocation succeeds, and nothing outside it is touched. Needs root and a cgroup file
// system with a memory controller (this project's CI machine: cgroup v1, the cgroupfs driver).
import { existsSync, readdirSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareSandboxCgroup } from '../../../host/sandbox/docker/cgroup.ts';
import { until } from '../../helpers/until.ts';
import { dockerFixture, type Fixture, pingOnlyConnect, shellOutput } from './fixtures.ts';

const ROOT = '/sys/fs/cgroup';
const unified = existsSync(join(ROOT, 'cgroup.controllers'));
const usable = process.getuid?.() === 0 && (unified || existsSync(join(ROOT, 'memory')));
const MiB = 1024 * 1024;

describe.skipIf(!usable)('sandboxes under one cgroup with a memory limit for all of them', () => {
  let fx: Fixture;
  let name: string;
  const usage = () =>
    Number(
      readFileSync(
        join(ROOT, unified ? name : `memory/${name}`, unified ? 'memory.current' : 'memory.usage_in_bytes'),
        'utf8',
      ),
    );

  beforeAll(() => {
    fx = dockerFixture();
    name = `dsh-test-${fx.runId}`;
  });
  afterAll(async () => {
    await fx?.sweep();
    // The engine made the containers' cgroups under this one in every hierarchy; all gone with them.
    const dirs = unified ? [join(ROOT, name)] : readdirSync(ROOT).map((h) => join(ROOT, h, name));
    for (const dir of dirs) if (existsSync(dir)) rmdirSync(dir);
  });

  it("ends the largest process inside it, never the host's, when the sandboxes together pass it", async () => {
    const parent = prepareSandboxCgroup(name, 300 * MiB);
    const provider = fx.provider({ connect: pingOnlyConnect, cgroupParent: parent });
    const limits = { memoryBytes: 256 * MiB };
    const a = await provider.create({ tenantId: 't1', agentId: 'cgroup-a', limits });
    const b = await provider.create({ tenantId: 't2', agentId: 'cgroup-b', limits });
    const ca = fx.docker.getContainer(a.id);
    const cb = fx.docker.getContainer(b.id);
    expect((await ca.inspect()).HostConfig.CgroupParent).toBe(parent);
    // Each is within its own limit; together they pass the cgroup's.
    const holder = ca.exec({
      Cmd: ['python3', '-c', 'a = bytearray(200 * 1024 * 1024); import time; time.sleep(600)'],
      User: '1000:1000',
    });
    await (await holder).start({ Detach: true });
    await until(async () => usage() > 190 * MiB, { what: "the first sandbox's 200 MB", timeoutMs: 30_000 });
    expect(
      await shellOutput(cb, 'python3 -c "a = bytearray(200 * 1024 * 1024); print(\'second allocated\')"'),
    ).toContain('second allocated');
    expect(await shellOutput(ca, 'echo "python: $(pgrep -c python3)"')).toMatch(/python: 0\b/);
    expect(usage()).toBeLessThanOrEqual(300 * MiB);
    await provider.close();
  }, 120_000);
});
