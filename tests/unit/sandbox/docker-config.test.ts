import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  containerConfig,
  DOCKER_DEFAULT_LIMITS,
  DOCKER_DEFAULT_MAXIMA,
  resolveLimits,
} from '../../../host/sandbox/docker/config.ts';
import { SECCOMP_PROFILE, seccompFor } from '../../../host/sandbox/docker/seccomp.ts';
import { GVISOR_BIN, runtimePath } from '../../../sandbox-image/sandboxd/runtime-path.ts';
import { codeOf } from '../../contract/sandbox/suite.ts';

describe('docker sandbox limits', () => {
  it('takes requests within the maxima and refuses the rest with LIMIT_EXCEEDED', async () => {
    expect(resolveLimits(DOCKER_DEFAULT_LIMITS, DOCKER_DEFAULT_MAXIMA, { pids: 64 })).toEqual({
      ...DOCKER_DEFAULT_LIMITS,
      pids: 64,
    });
    for (const bad of [{ pids: 1e6 }, { memoryBytes: -1 }, { nanoCpus: 1.5 }, { diskBytes: 2 ** 50 }]) {
      expect(
        await codeOf((async () => resolveLimits(DOCKER_DEFAULT_LIMITS, DOCKER_DEFAULT_MAXIMA, bad))()),
      ).toBe('LIMIT_EXCEEDED');
    }
  });
});

describe('docker container config', () => {
  const c = containerConfig({
    image: 'img',
    name: 'n',
    workspace: { Type: 'bind', Source: '/srv/ws/n-ws', Target: '/workspace' },
    labels: { a: 'b' },
    limits: DOCKER_DEFAULT_LIMITS,
    tmpBytes: 1024,
  });
  it('is hardened by default', () => {
    expect(c).toMatchObject({
      // Root only until sandboxd runs apart from the agent (uid 1000), at its first instruction.
      User: '0:0',
      OpenStdin: true,
      StdinOnce: false,
      Tty: false,
      NetworkDisabled: true,
    });
    expect(c.HostConfig).toMatchObject({
      NetworkMode: 'none',
      CapDrop: ['ALL'],
      CapAdd: ['SETUID', 'SETGID'],
      ShmSize: 1024,
      Privileged: false,
      ReadonlyRootfs: true,
      Init: true,
      LogConfig: { Type: 'none' },
      MemorySwap: DOCKER_DEFAULT_LIMITS.memoryBytes,
      PidsLimit: DOCKER_DEFAULT_LIMITS.pids,
    });
    expect(c.HostConfig?.Binds).toBeUndefined();
    expect(c.HostConfig?.Mounts).toEqual([
      { Type: 'bind', Source: '/srv/ws/n-ws', Target: '/workspace', ReadOnly: false },
    ]);
    expect(c.HostConfig?.Ulimits?.map((u) => u.Name)).not.toContain('nproc');
    expect(c.Env).toContain('SANDBOXD_AGENT=1000:1000');
    expect(c.Env).toContain('SANDBOXD_SERVER_GID=1001');
  });
  it('runs under our seccomp profile: Docker default minus io_uring, memfd_secret and message queues', () => {
    const opts = c.HostConfig?.SecurityOpt ?? [];
    expect(opts).toContain('no-new-privileges:true');
    const seccomp = opts.find((o: string) => o.startsWith('seccomp='));
    const profile = JSON.parse(seccomp?.slice('seccomp='.length) ?? 'null') as {
      defaultAction: string;
      syscalls: Array<{ names: string[]; action: string; errnoRet?: number }>;
    };
    expect(profile.defaultAction).toBe('SCMP_ACT_ERRNO');
    const allowed = new Set(
      profile.syscalls.filter((r) => r.action === 'SCMP_ACT_ALLOW').flatMap((r) => r.names),
    );
    for (const name of ['io_uring_setup', 'io_uring_enter', 'memfd_secret', 'mq_open', 'userfaultfd', 'bpf'])
      expect(allowed.has(name), name).toBe(false);
    for (const name of ['read', 'execve', 'clone', 'ptrace', 'setresuid', 'shmget'])
      expect(allowed.has(name), name).toBe(true);
    const enosys = profile.syscalls.find((r) => r.names.includes('io_uring_setup'));
    expect(enosys).toMatchObject({ action: 'SCMP_ACT_ERRNO', errnoRet: 38 });
  });
});

describe('the gVisor variant', () => {
  type Profile = { syscalls: Array<{ names: string[]; action: string; errnoRet?: number }> };
  const gvisor = JSON.parse(seccompFor('gvisor')) as Profile;
  const runc = JSON.parse(SECCOMP_PROFILE) as Profile;
  const allowedIn = (p: Profile): Set<string> =>
    new Set(p.syscalls.filter((r) => r.action === 'SCMP_ACT_ALLOW').flatMap((r) => r.names));

  it('leaves the runc profile as it is', () => {
    expect(seccompFor('runc')).toBe(SECCOMP_PROFILE);
    expect(seccompFor(undefined)).toBe(SECCOMP_PROFILE);
    expect(allowedIn(runc).has('pselect')).toBe(false);
  });
  it("names pselect6 by gVisor's name too, and adds nothing else but clone3", () => {
    const added = [...allowedIn(gvisor)].filter((name) => !allowedIn(runc).has(name));
    expect(added).toEqual(['pselect']);
    expect(gvisor.syscalls.find((r) => r.names.includes('pselect'))?.names).toContain('pselect6');
    // clone3 goes to gVisor (ENOSYS there), not to an errno rule gVisor would answer with EPERM.
    expect(
      gvisor.syscalls.filter((r) => r.names.includes('clone3') && r.action !== 'SCMP_ACT_ALLOW'),
    ).toEqual([]);
  });
  it("puts the image's busybox ls and stat first on PATH under gVisor only", () => {
    const path = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
    expect(runtimePath('gvisor', path)).toBe(`${GVISOR_BIN}:${path}`);
    expect(runtimePath('gvisor', `${GVISOR_BIN}:${path}`)).toBe(`${GVISOR_BIN}:${path}`);
    expect(runtimePath(undefined, path)).toBe(path);
    expect(runtimePath('runc', path)).toBe(path);
    expect(runtimePath('gVisor; rm -rf /', path)).toBe(path);
  });
});

describe('docker provider source', () => {
  it('never uses the Docker archive API (CVE-2018-15664 class): bulk transfer goes through sandboxd', async () => {
    const { readdir, readFile } = await import('node:fs/promises');
    const dir = new URL('../../../host/sandbox/docker/', import.meta.url);
    const files = await readdir(dir, { recursive: true, withFileTypes: true });
    expect(files.some((f) => f.name === 'volume.ts')).toBe(true);
    for (const f of files.filter((f) => f.isFile())) {
      const src = await readFile(join(f.parentPath, f.name), 'utf8');
      expect(src, f.name).not.toMatch(/\.(putArchive|getArchive|infoArchive)\(/);
    }
  });
});
