// Where an agent's /workspace lives, and what bounds its size.
//
// `loop` (the default of the service): every workspace is its own ext4 file system in a sparse
// image file `<root>/<name>.img`, loop-mounted (nosuid, nodev, discard) at `<root>/<name>` and
// bind-mounted into the container. A full workspace fails writes with ENOSPC inside that agent only;
// deleted files give their blocks back to the host (discard punches holes in the image). The kernel
// of these machines has no quota support (neither XFS project quotas nor ext4 quotas), so a file
// system per workspace is the limit that works everywhere a root control plane can mount loops.
// `volume`: a plain Docker named volume, no size limit; for engines the control plane cannot mount
// for (remote, rootless) and only when the operator turns the quota off.
//
// Invariants: the mount point directory is root-owned mode 0000, so a container started while its
// workspace is not mounted (after a reboot) sees an unusable directory instead of writing to the
// host's disk, and `ready()` remounts before every container start; nothing here ever reads or
// writes a path inside a mounted workspace (the host only formats, mounts and unmounts); names are
// checked so that no path leaves `root`.

import { execFile } from 'node:child_process';
import { constants, existsSync } from 'node:fs';
import { access, chmod, mkdir, open, readdir, readFile, rm, rmdir, stat, statfs } from 'node:fs/promises';
import { join, resolve as resolvePath } from 'node:path';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { SandboxError } from '../../errors.ts';
import { WORKSPACE_ROOT } from '../paths.ts';
import { fromDocker, isNotFound } from './errors.ts';

const exec = promisify(execFile);

/**
 * Where the loop tools are looked up: the system's own directories, not PATH (the environment is
 * config.ts's to read, and a workspace's file system is made by the system's mkfs and mount).
 */
const SYSTEM_BIN = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
const found = new Map<string, Promise<string | undefined>>();
const systemTool = (tool: string): Promise<string | undefined> => {
  let path = found.get(tool);
  if (!path) {
    path = (async () => {
      for (const dir of SYSTEM_BIN) {
        const candidate = join(dir, tool);
        if (
          await access(candidate, constants.X_OK).then(
            () => true,
            () => false,
          )
        )
          return candidate;
      }
      return undefined;
    })();
    found.set(tool, path);
  }
  return path;
};
/** Runs a system tool by its absolute path. */
const run = async (tool: string, args: string[]) => {
  const path = await systemTool(tool);
  if (!path) throw new Error(`${tool} is not installed in ${SYSTEM_BIN.join(', ')}`);
  return exec(path, args);
};

/** The agent user inside the image (Dockerfile.sandbox). */
const AGENT_UID = 1000;
const NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,120}$/;
/** Smallest workspace: ext4 needs room for its journal and metadata. */
export const MIN_WORKSPACE_BYTES = 16 * 1024 * 1024;

export interface WorkspaceUsage {
  usedBytes: number;
  limitBytes: number;
}

export interface WorkspaceStore {
  readonly kind: 'loop' | 'volume';
  /** Makes the workspace `name` holding at most `bytes`; returns the container's /workspace mount. */
  create(name: string, bytes: number, labels: Record<string, string>): Promise<Docker.MountSettings>;
  /** Before a container (re)starts: its workspace is mounted. Fails SANDBOX_UNAVAILABLE if it is gone. */
  ready(mount: WorkspaceMount): Promise<void>;
  /** Removes a workspace whose container is gone. "Already gone" is done. */
  remove(mount: WorkspaceMount): Promise<void>;
  /** The size limit of a workspace, when it has one (re-adopted containers). */
  limitOf(mount: WorkspaceMount): Promise<number | undefined>;
  /** Space used and limit, when known. */
  usage(mount: WorkspaceMount): Promise<WorkspaceUsage | undefined>;
  /** Whether the workspace still exists (its container may not): a new container can take it over. */
  exists(mount: WorkspaceMount): Promise<boolean>;
  /**
   * True only when the mount is provably one of this store's (loop: an image under its root).
   * Volumes carry no such proof and answer false.
   */
  owns(mount: WorkspaceMount): boolean;
  /**
   * Removes the workspaces (of this store) that no container in `keep` uses and whose name passes
   * `only` (default: every name), except the ones this process made and has not removed, unless
   * `all` (tests tearing down a run).
   */
  sweep(keep: Iterable<WorkspaceMount>, all?: boolean, only?: (name: string) => boolean): Promise<number>;
}

/** The /workspace mount of a container as `docker inspect` reports it. */
export interface WorkspaceMount {
  type: string;
  /** Volume name or host path. */
  source: string;
}

/** The /workspace mount of an inspected container, if it has one. */
export const workspaceOf = (info: Docker.ContainerInspectInfo): WorkspaceMount | undefined => {
  const m = (info.Mounts ?? []).find((x) => x.Destination === WORKSPACE_ROOT);
  if (!m) return undefined;
  return m.Type === 'volume' ? { type: 'volume', source: m.Name ?? '' } : { type: m.Type, source: m.Source };
};

// --- loop ---------------------------------------------------------------------------------------

/**
 * Why loop workspaces cannot work here, or undefined when they can. `dockerHost` is the engine's
 * address (config.dockerHost, from DOCKER_HOST): a remote engine cannot see this machine's mounts.
 */
export const loopUnavailable = async (
  options: { dockerHost?: string | undefined } = {},
): Promise<string | undefined> => {
  if (process.platform !== 'linux') return 'loop workspaces need Linux';
  if (process.getuid?.() !== 0) return 'mounting loop workspaces needs root';
  if (!existsSync('/dev/loop-control')) return 'the kernel has no loop devices (/dev/loop-control)';
  for (const tool of ['mkfs.ext4', 'mount', 'umount']) {
    if (!(await systemTool(tool))) return `${tool} is not installed (Debian: e2fsprogs, mount)`;
  }
  const host = options.dockerHost;
  if (host && !host.startsWith('unix://'))
    return `the Docker engine at DOCKER_HOST=${host} is not on this machine, so it cannot see host mounts`;
  return undefined;
};

/** Mount points currently mounted under `root` (from /proc/self/mountinfo; octal escapes decoded). */
const mountedUnder = async (root: string): Promise<Set<string>> => {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const target = line.split(' ')[4];
    if (!target) continue;
    const path = target.replace(/\\([0-7]{3})/g, (_, o: string) =>
      String.fromCharCode(Number.parseInt(o, 8)),
    );
    if (path.startsWith(`${root}/`)) out.add(path);
  }
  return out;
};

const failed = (what: string, error: unknown, data: Record<string, unknown>): SandboxError => {
  const stderr = String((error as { stderr?: unknown }).stderr ?? (error as Error).message ?? error).trim();
  return new SandboxError('SANDBOX_UNAVAILABLE', `${what} failed: ${stderr.slice(0, 300)}`, {
    data,
    cause: error,
  });
};

export interface LoopOptions {
  /**
   * How far the workspaces' limits may exceed the host disk they live on. 1 (the default): a new
   * workspace is only made when every workspace can still grow to its limit with `reserveBytes`
   * to spare, so a full host disk (which would fail every workspace's writes at once) cannot
   * happen. Above 1 the images are thin-provisioned that much.
   */
  overcommit?: number;
  /** Host disk kept free beyond what the workspaces may still take. Default 1 GiB. */
  reserveBytes?: number;
}

export const createLoopWorkspaces = (rootDir: string, options: LoopOptions = {}): WorkspaceStore => {
  const root = resolvePath(rootDir);
  const overcommit = options.overcommit ?? 1;
  const reserveBytes = options.reserveBytes ?? 1024 ** 3;
  const paths = (name: string) => {
    if (!NAME.test(name)) throw new SandboxError('INTERNAL', `bad workspace name ${JSON.stringify(name)}`);
    return { image: join(root, `${name}.img`), dir: join(root, name) };
  };
  /** The workspace name of a mount this store made, or undefined for anything else. */
  const nameOf = (mount: WorkspaceMount): string | undefined => {
    if (mount.type !== 'bind' || !mount.source.startsWith(`${root}/`)) return undefined;
    const name = mount.source.slice(root.length + 1);
    return NAME.test(name) ? name : undefined;
  };
  /** Made by this process and not removed: a sweep must not take one whose container is on its way. */
  const mine = new Set<string>();
  let prepared: Promise<void> | undefined;
  /** Admission checks and the truncates they admit run one at a time (two creates cannot both fit). */
  let admitting: Promise<unknown> = Promise.resolve();

  /** Refuses a workspace the host disk could not hold once every workspace grew to its limit. */
  const admit = async (name: string, bytes: number): Promise<void> => {
    let growth = bytes;
    for (const file of await readdir(root)) {
      if (!file.endsWith('.img')) continue;
      const s = await stat(join(root, file)).catch(() => undefined);
      if (s) growth += Math.max(0, s.size - s.blocks * 512);
    }
    const fs = await statfs(root);
    const free = fs.bavail * fs.bsize - reserveBytes;
    if (growth > free * overcommit) {
      throw new SandboxError(
        'CAPACITY_EXCEEDED',
        `This host has no disk left for another ${Math.round(bytes / 1024 ** 2)} MiB workspace (the existing ones may still grow into what is free); ask for a smaller one or try later.`,
        { data: { name, bytes, growthBytes: growth, freeBytes: free, overcommit } },
      );
    }
    const file = await open(paths(name).image, 'w', 0o600);
    await file.truncate(bytes).finally(() => file.close());
  };
  const prepare = () => {
    prepared ??= mkdir(root, { recursive: true, mode: 0o700 }).then(() => chmod(root, 0o700));
    return prepared;
  };

  const mountOne = async (name: string): Promise<void> => {
    const { image, dir } = paths(name);
    if ((await mountedUnder(root)).has(dir)) return;
    if (!existsSync(image))
      throw new SandboxError('SANDBOX_UNAVAILABLE', `The workspace ${name} is gone (no ${image}).`, {
        data: { name },
      });
    await mkdir(dir, { recursive: true, mode: 0o000 });
    await chmod(dir, 0o000);
    try {
      await run('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime,discard', image, dir]);
    } catch (e) {
      // Two starts raced: the other one mounted it.
      if ((await mountedUnder(root)).has(dir)) return;
      throw failed('Mounting the workspace', e, { name });
    }
  };

  const unmountOne = async (name: string): Promise<void> => {
    const { dir } = paths(name);
    if (!(await mountedUnder(root)).has(dir)) return;
    try {
      await run('umount', [dir]);
    } catch (e) {
      // Still busy (a container that is being removed): detach now, freed when the last user goes.
      try {
        await run('umount', ['--lazy', dir]);
      } catch {
        throw failed('Unmounting the workspace', e, { name });
      }
    }
  };

  const removeOne = async (name: string): Promise<void> => {
    const { image, dir } = paths(name);
    mine.delete(name);
    await unmountOne(name);
    await rmdir(dir).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'ENOENT') throw e;
    });
    await rm(image, { force: true });
  };

  return {
    kind: 'loop',
    async create(name, bytes) {
      if (!Number.isSafeInteger(bytes) || bytes < MIN_WORKSPACE_BYTES)
        throw new SandboxError('LIMIT_EXCEEDED', `A workspace needs at least ${MIN_WORKSPACE_BYTES} bytes.`, {
          data: { bytes },
        });
      await prepare();
      const { image } = paths(name);
      mine.add(name);
      try {
        // Sparse: the image takes host disk only for what is written; admitted only if it fits.
        const admitted = admitting.then(() => admit(name, bytes));
        admitting = admitted.catch(() => {});
        await admitted;
        await run('mkfs.ext4', [
          '-q',
          '-F',
          '-m',
          '0',
          '-i',
          '8192',
          '-L',
          'workspace',
          '-E',
          `lazy_itable_init=1,lazy_journal_init=1,root_owner=${AGENT_UID}:${AGENT_UID}`,
          image,
        ]);
        await mountOne(name);
      } catch (e) {
        await removeOne(name).catch(() => {});
        throw e instanceof SandboxError ? e : failed('Creating the workspace', e, { name });
      }
      const { dir } = paths(name);
      // mkfs makes lost+found; the agent's workspace starts empty.
      await rmdir(join(dir, 'lost+found')).catch(() => {});
      return { Type: 'bind', Source: dir, Target: WORKSPACE_ROOT, ReadOnly: false };
    },
    async ready(mount) {
      const name = nameOf(mount);
      if (name !== undefined) await mountOne(name);
    },
    async remove(mount) {
      const name = nameOf(mount);
      if (name !== undefined) await removeOne(name);
    },
    async limitOf(mount) {
      const name = nameOf(mount);
      if (name === undefined) return undefined;
      return (await stat(paths(name).image).catch(() => undefined))?.size;
    },
    async usage(mount) {
      const name = nameOf(mount);
      if (name === undefined) return undefined;
      const { dir } = paths(name);
      if (!(await mountedUnder(root)).has(dir)) return undefined;
      const s = await statfs(dir);
      return { usedBytes: (s.blocks - s.bfree) * s.bsize, limitBytes: s.blocks * s.bsize };
    },
    async exists(mount) {
      const name = nameOf(mount);
      return name !== undefined && existsSync(paths(name).image);
    },
    owns: (mount) => nameOf(mount) !== undefined,
    async sweep(keep, all = false, only = () => true) {
      const kept = new Set<string>();
      for (const m of keep) {
        const name = nameOf(m);
        if (name !== undefined) kept.add(name);
      }
      let removed = 0;
      const files = await readdir(root).catch(() => [] as string[]);
      for (const file of files) {
        if (!file.endsWith('.img')) continue;
        const name = file.slice(0, -4);
        if (!NAME.test(name) || kept.has(name) || !only(name) || (mine.has(name) && !all)) continue;
        await removeOne(name);
        removed++;
      }
      return removed;
    },
  };
};

// --- volume -------------------------------------------------------------------------------------

/** Plain Docker named volumes: no size limit (DSH_DISK_QUOTA=off). */
export const createVolumeWorkspaces = (docker: Docker): WorkspaceStore => ({
  kind: 'volume',
  async create(name, _bytes, labels) {
    await docker.createVolume({ Name: name, Labels: labels });
    return { Type: 'volume', Source: name, Target: WORKSPACE_ROOT, ReadOnly: false };
  },
  async ready() {},
  async remove(mount) {
    if (mount.type !== 'volume' || mount.source === '') return;
    await docker
      .getVolume(mount.source)
      .remove()
      .catch((e) => {
        if (!isNotFound(e)) throw fromDocker(e, 'Removing the sandbox volume', { volume: mount.source });
      });
  },
  async limitOf() {
    return undefined;
  },
  async usage() {
    return undefined;
  },
  async exists(mount) {
    if (mount.type !== 'volume' || mount.source === '') return false;
    try {
      await docker.getVolume(mount.source).inspect();
      return true;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw fromDocker(e, 'Inspecting the sandbox volume', { volume: mount.source });
    }
  },
  owns: () => false,
  async sweep() {
    return 0;
  },
});
