// CIS Docker Benchmark v1.6.0 section 5 (container runtime) checks that apply to an agent sandbox,
// read back from `docker inspect` of a container the provider made (docker-bench-security's fields),
// under every sandbox runtime (../runtimes.ts: runc on the main engine, gvisor on a private one).

import type Docker from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GVISOR_MEMORY_HEADROOM, GVISOR_PIDS_HEADROOM } from '../../../host/sandbox/docker/runtimes.ts';
import { describeRuntimes } from '../runtimes.ts';
import { dockerFixture, type Fixture, pingOnlyConnect, shellOutput } from './fixtures.ts';

describeRuntimes('CIS 5.x container runtime checks on an agent sandbox', (engine) => {
  let fx: Fixture;
  let info: Docker.ContainerInspectInfo;
  let host: Record<string, unknown>;

  beforeAll(async () => {
    fx = dockerFixture(undefined, engine().docker);
    const provider = fx.provider({ connect: pingOnlyConnect });
    const sb = await provider.create({
      tenantId: 't1',
      agentId: 'cis-agent',
      limits: { memoryBytes: 256 * 1024 * 1024, pids: 128 },
      ...engine().sandbox,
    });
    await provider.close();
    info = await fx.docker.getContainer(sb.id).inspect();
    host = info.HostConfig as unknown as Record<string, unknown>;
  });
  afterAll(() => fx?.sweep());

  it('runs under the runtime asked for', () => {
    expect(host.Runtime).toBe(engine().runtime === 'gvisor' ? 'runsc' : 'runc');
  });
  it('is running, labelled with tenant and agent, and managed', () => {
    expect(info.State.Running).toBe(true);
    expect(info.Config.Labels).toMatchObject({
      'dsh.managed': '1',
      'dsh.tenant': 't1',
      'dsh.agent': 'cis-agent',
    });
  });
  it('5.4 drops all capabilities and adds back only SETUID and SETGID (for sandboxd); 5.5 is not privileged', () => {
    expect(host.CapDrop).toEqual(['ALL']);
    expect(host.CapAdd).toEqual(['SETUID', 'SETGID']);
    expect(host.Privileged).toBe(false);
  });
  it('5.2/5.22/5.26: no-new-privileges, our own seccomp profile, AppArmor not disabled', () => {
    const opts = (host.SecurityOpt as string[]) ?? [];
    expect(opts.some((o) => /^no-new-privileges(:true)?$/.test(o))).toBe(true);
    expect(opts.some((o) => /seccomp[=:]unconfined|apparmor[=:]unconfined/.test(o))).toBe(false);
    expect(opts.filter((o) => o.startsWith('seccomp=')).length).toBe(1);
  });
  it('5.6/5.32: the workspace (its own file system in the run folder) and the link folder read-only, never the Docker socket', () => {
    expect(host.Binds ?? null).toBeNull();
    const kind = fx.workspacesDir ? 'bind' : 'volume';
    const mounts = [...info.Mounts].sort((a, b) => a.Destination.localeCompare(b.Destination));
    expect(mounts.map((m) => [m.Type, m.Destination, m.RW])).toEqual([
      ['bind', '/run/dsh-link', false],
      [kind, '/workspace', true],
    ]);
    if (fx.workspacesDir) expect(mounts[1]?.Source).toBe(`${fx.workspacesDir}/${info.Name.slice(1)}-ws`);
    // The link folder is a folder of this container's own in the provider's links folder.
    expect(mounts[0]?.Source).toMatch(new RegExp(`^${fx.linksDir}/[A-Za-z0-9_-]{12}$`));
    expect(JSON.stringify(info.Mounts)).not.toMatch(/docker\.sock/);
  });
  it('5.10/5.30: network none', () => {
    expect(host.NetworkMode).toBe('none');
    expect((info.Config as { NetworkDisabled?: boolean }).NetworkDisabled).toBe(true);
    expect(Object.keys(info.NetworkSettings.Networks ?? {}).filter((n) => n !== 'none')).toEqual([]);
  });
  it('5.11/5.12/5.29: memory (swap equal), CPU and pids limits as asked', () => {
    const memory = 256 * 1024 * 1024 + (engine().runtime === 'gvisor' ? GVISOR_MEMORY_HEADROOM : 0);
    expect(host.Memory).toBe(memory);
    expect(host.MemorySwap).toBe(memory);
    expect(host.NanoCpus).toBeGreaterThan(0);
    // Under gVisor the cgroup also carries gVisor's own kernel threads (runtimes.ts).
    expect(host.PidsLimit).toBe(128 + (engine().runtime === 'gvisor' ? GVISOR_PIDS_HEADROOM : 0));
  });
  it('5.13: read-only root with a size-limited /tmp tmpfs and a /dev/shm of the same size', () => {
    expect(host.ReadonlyRootfs).toBe(true);
    const size = /size=(\d+)/.exec((host.Tmpfs as Record<string, string>)['/tmp'] ?? '')?.[1];
    expect(Number(size)).toBeGreaterThan(0);
    expect(host.ShmSize).toBe(Number(size));
  });
  it('5.15: restart policy "no"', () => {
    expect((host.RestartPolicy as { Name: string }).Name).toMatch(/^(no|)$/);
  });
  it('5.16/5.17/5.21/5.31: no host PID, IPC, UTS or user namespace', () => {
    expect(host.PidMode).not.toBe('host');
    expect(host.IpcMode).not.toBe('host');
    expect(host.UTSMode).not.toBe('host');
    expect(host.UsernsMode).not.toBe('host');
  });
  it('5.18: no host devices; 5.25: default cgroup parent', () => {
    expect((host.Devices as unknown[] | null) ?? []).toEqual([]);
    expect(host.CgroupParent ?? '').toBe('');
  });
  it('4.1/5.24: starts as root only for sandboxd to run apart from the agent; init process, log driver none', () => {
    // CIS 4.1 wants a non-root Config.User; ours starts as root so that sandboxd can take real uid 0
    // and effective uid 1000 (identity.ts); the next test shows what actually runs.
    expect(info.Config.User).toBe('0:0');
    expect(info.Config.Env).toContain('SANDBOXD_AGENT=1000:1000');
    expect(host.Init).toBe(true);
    expect((host.LogConfig as { Type: string }).Type).toBe('none');
  });
  it('its processes really run as uid 1000, with no capabilities, a read-only root and only loopback', async () => {
    const out = await shellOutput(
      fx.docker.getContainer(info.Id),
      'id -u; grep CapEff /proc/self/status; touch /etc/x 2>&1 || echo ro; echo net: $(awk "NR>2{print \\$1}" /proc/net/dev | tr -d :); for i in $(seq 100); do grep -qE "^Uid:.*1000" /proc/$(pgrep -x node)/status && break; sleep 0.1; done; grep -E "^(Uid|CapEff)" /proc/$(pgrep -x node)/status | tr -s "\t " " "',
    );
    expect(out).toMatch(/\b1000\b/);
    expect(out).toMatch(/CapEff:\s+0000000000000000/);
    expect(out).toMatch(/Read-only file system|ro/);
    expect(out).toMatch(/net: lo\s*$/m);
    // sandboxd (once started): real and saved uid 0, effective uid 1000, no capability in effect.
    expect(out).toMatch(/Uid: 0 1000 0 1000\s+CapEff: 0000000000000000/);
  });
});
