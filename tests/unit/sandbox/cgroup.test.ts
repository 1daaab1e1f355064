// The sandboxes' cgroup (DSH_SANDBOX_CGROUP, host/sandbox/docker/cgroup.ts) on a fake cgroup file
// system: made with its memory limit under cgroup v1 (the memory controller's hierarchy) and v2
// (the unified one), refused with CONFIG_INVALID when the name is not one segment or the layout or
// the write fails; and a container names it as its parent only under the engine's default runtime.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import { defaultSandboxMemory, prepareSandboxCgroup } from '../../../host/sandbox/docker/cgroup.ts';
import { containerConfig, DOCKER_DEFAULT_LIMITS } from '../../../host/sandbox/docker/config.ts';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-cgroup-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const codeOf = (f: () => unknown): string => {
  try {
    f();
    return 'ok';
  } catch (e) {
    return e instanceof SandboxError ? e.code : String(e);
  }
};

it('makes the cgroup with its memory limit under cgroup v1', () => {
  mkdirSync(join(root, 'memory'));
  expect(prepareSandboxCgroup('dsh-sandboxes', 300 * 1024 * 1024, root)).toBe('/dsh-sandboxes');
  expect(readFileSync(join(root, 'memory', 'dsh-sandboxes', 'memory.limit_in_bytes'), 'utf8')).toBe(
    String(300 * 1024 * 1024),
  );
  // Made again (another service, a restart): the limit is written again.
  expect(prepareSandboxCgroup('dsh-sandboxes', 400 * 1024 * 1024, root)).toBe('/dsh-sandboxes');
  expect(readFileSync(join(root, 'memory', 'dsh-sandboxes', 'memory.limit_in_bytes'), 'utf8')).toBe(
    String(400 * 1024 * 1024),
  );
});

it('makes the cgroup with its memory limit under cgroup v2', () => {
  writeFileSync(join(root, 'cgroup.controllers'), 'cpu memory pids\n');
  expect(prepareSandboxCgroup('sandboxes.v2', 512 * 1024 * 1024, root)).toBe('/sandboxes.v2');
  expect(readFileSync(join(root, 'sandboxes.v2', 'memory.max'), 'utf8')).toBe(String(512 * 1024 * 1024));
});

it('refuses a name that is not one segment, a layout without memory, and a cgroup it cannot write', () => {
  mkdirSync(join(root, 'memory'));
  for (const name of ['', '../escape', 'a/b', '.hidden', 'x'.repeat(65)])
    expect(
      codeOf(() => prepareSandboxCgroup(name, 1024, root)),
      name,
    ).toBe('CONFIG_INVALID');
  const bare = mkdtempSync(join(tmpdir(), 'dsh-cgroup-bare-'));
  expect(codeOf(() => prepareSandboxCgroup('dsh', 1024, bare))).toBe('CONFIG_INVALID');
  rmSync(bare, { recursive: true });
  // A file where the cgroup's folder would be: it cannot be made.
  writeFileSync(join(root, 'memory', 'taken'), '');
  expect(codeOf(() => prepareSandboxCgroup('taken', 1024, root))).toBe('CONFIG_INVALID');
});

it('leaves the host a tenth of its memory, at least 1 GiB', () => {
  const GiB = 1024 ** 3;
  expect(defaultSandboxMemory(24 * GiB)).toBe(24 * GiB - Math.floor((24 * GiB) / 10));
  expect(defaultSandboxMemory(4 * GiB)).toBe(3 * GiB);
});

it("names the cgroup as a container's parent under the engine's default runtime only", () => {
  const spec = {
    image: 'i',
    name: 'n',
    workspace: { Type: 'volume' as const, Source: 'v', Target: '/workspace' },
    labels: {},
    limits: DOCKER_DEFAULT_LIMITS,
    tmpBytes: 1024,
  };
  expect(containerConfig(spec).HostConfig?.CgroupParent).toBeUndefined();
  expect(containerConfig({ ...spec, cgroupParent: '/dsh-sandboxes' }).HostConfig?.CgroupParent).toBe(
    '/dsh-sandboxes',
  );
  expect(
    containerConfig({ ...spec, cgroupParent: '/dsh-sandboxes', runtime: 'runsc' }).HostConfig?.CgroupParent,
  ).toBeUndefined();
});
