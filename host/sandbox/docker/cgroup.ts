// The cgroup every sandbox runs under when the operator names one (DSH_SANDBOX_CGROUP): made by
// the service on its own host with a memory limit for all the sandboxes together, so that however
// their own limits add up, the host's memory is never theirs to exhaust. Past it the kernel reclaims
// and, at worst, ends the largest process inside that cgroup (another sandbox's, never the control
// plane's, its isolate workers' or the engine's), as kubelet's `kubepods` cgroup does for pods.
// Each sandbox's container names it as its cgroup parent (HostConfig.CgroupParent); the engine
// makes the container's own cgroup beneath it. cgroup v1 (the memory controller's hierarchy) and
// v2 (the unified one) with the engine's cgroupfs driver; the service must be able to write there
// (root on the engine's host). Several services on one host may name the same cgroup: each writes
// the limit it was given (the same default on one host).
// Invariants: a name is one plain path segment; nothing is made or written unless asked for; a
// cgroup that cannot be made or limited is a CONFIG_INVALID at start, never a silent no-limit.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { SandboxError } from '../../errors.ts';

/** A cgroup name: one path segment of letters, digits, `.`, `_` and `-`. */
export const CGROUP_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The sandboxes' memory when none is given: the host's, less a tenth of it (at least 1 GiB) for the host. */
export const defaultSandboxMemory = (total = totalmem()): number =>
  Math.max(256 * 1024 * 1024, total - Math.max(1024 * 1024 * 1024, Math.floor(total / 10)));

/**
 * Makes (or finds) the cgroup `name` under `root` and limits its memory to `memoryBytes`; returns
 * the cgroup parent the engine is given (`/name`). CONFIG_INVALID when the name is not one segment,
 * the layout is neither cgroup v1 nor v2, or the cgroup cannot be made or limited.
 */
export function prepareSandboxCgroup(name: string, memoryBytes: number, root = '/sys/fs/cgroup'): string {
  if (!CGROUP_NAME.test(name))
    throw new SandboxError(
      'CONFIG_INVALID',
      `DSH_SANDBOX_CGROUP must be one cgroup name (letters, digits, ".", "_", "-"; at most 64), got "${name}".`,
      { data: { sandboxCgroup: name } },
    );
  const unified = existsSync(join(root, 'cgroup.controllers'));
  const dir = unified ? join(root, name) : join(root, 'memory', name);
  if (!unified && !existsSync(join(root, 'memory')))
    throw new SandboxError(
      'CONFIG_INVALID',
      `No cgroup memory controller under ${root}: DSH_SANDBOX_CGROUP needs one.`,
      {
        data: { sandboxCgroup: name },
      },
    );
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, unified ? 'memory.max' : 'memory.limit_in_bytes'),
      String(Math.floor(memoryBytes)),
    );
  } catch (e) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Could not make the sandboxes' cgroup ${dir} with a memory limit (${(e as Error).message}): DSH_SANDBOX_CGROUP needs write access to the cgroup file system of the engine's host (root).`,
      { data: { sandboxCgroup: name } },
    );
  }
  return `/${name}`;
}
