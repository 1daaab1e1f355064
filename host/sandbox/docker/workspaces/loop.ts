// Loop workspaces, the service's default: every workspace is its own ext4 file system in a sparse
// image file `<root>/<name>.img`, loop-mounted (nosuid, nodev, discard) at `<root>/<name>` and
// bind-mounted into the container. A full workspace fails writes with ENOSPC inside that agent only;
// deleted files give their blocks back to the host (discard punches holes in the image). The kernel
// of these machines has no quota support (neither XFS project quotas nor ext4 quotas), so a file
// system per workspace is the limit that works everywhere a root control plane can mount loops
// (probe.ts says whether this machine can).
//
// Invariants: the mount point directory is root-owned mode 0000, so a container started while its
// workspace is not mounted (after a reboot) sees an unusable directory instead of writing to the
// host's disk, and `ready()` remounts before every container start; nothing here ever reads or
// writes a path inside a mounted workspace (the host only formats, mounts and unmounts); names are
// checked so that no path leaves `root`; admission checks run one at a time, so two creates cannot
// both take the last room on the host's disk.
// Spares (keepSpares): formatted, unmounted images `<prefix>-spare-<random>.img` made ahead in the
// background, so that a create of the spared size only renames one to its own name and mounts it.
// A spare is handed out by this process only, from its in-memory list (taken synchronously, then
// renamed: never to two workspaces); one a crash left behind, whole or half-made, is never reused:
// it carries the instance's prefix and no container uses it, so the next adopt() sweeps it. Spares
// are `.img` files under `root`, so admission counts them like any workspace, and a create that
// would not fit otherwise removes spares first.

import { existsSync } from 'node:fs';
import { chmod, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, statfs } from 'node:fs/promises';
import { join, resolve as resolvePath } from 'node:path';
import type Docker from 'dockerode';
import { nanoid } from 'nanoid';
import { SandboxError } from '../../../errors.ts';
import { WORKSPACE_ROOT } from '../../paths.ts';
import type { WorkspaceMount, WorkspaceStore, WorkspaceUsage } from '../workspaces.ts';
import { runSystemTool } from './system-tools.ts';

/** The agent user inside the image (Dockerfile.sandbox). */
const AGENT_UID = 1000;
const NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,120}$/;
/** Smallest workspace: ext4 needs room for its journal and metadata. */
export const MIN_WORKSPACE_BYTES = 16 * 1024 * 1024;

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
  /** The host disk's free bytes for unprivileged use; statfs of the root by default (tests fix it). */
  freeBytes?: (root: string) => Promise<number>;
}

async function statfsFree(root: string): Promise<number> {
  const fs = await statfs(root);
  return fs.bavail * fs.bsize;
}

/** Mount points currently mounted under `root` (from /proc/self/mountinfo; octal escapes decoded). */
async function mountedUnder(root: string): Promise<Set<string>> {
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
}

/** A failed system tool as SANDBOX_UNAVAILABLE, quoting what it printed. */
function failed(what: string, error: unknown, data: Record<string, unknown>): SandboxError {
  const stderr = String((error as { stderr?: unknown }).stderr ?? (error as Error).message ?? error).trim();
  return new SandboxError('SANDBOX_UNAVAILABLE', `${what} failed: ${stderr.slice(0, 300)}`, {
    data,
    cause: error,
  });
}

const isFull = (e: unknown): boolean => e instanceof SandboxError && e.code === 'CAPACITY_EXCEEDED';

/** The spares kept for one name prefix (keepSpares). */
interface Spares {
  prefix: string;
  bytes: number;
  count: number;
  onError: (e: unknown) => void;
  /** Names of formatted spare images, ready to take. */
  ready: string[];
  filling: Promise<void> | undefined;
  dropped: boolean;
}

export function createLoopWorkspaces(rootDir: string, options: LoopOptions = {}): WorkspaceStore {
  const root = resolvePath(rootDir);
  const overcommit = options.overcommit ?? 1;
  const reserveBytes = options.reserveBytes ?? 1024 ** 3;
  const freeBytes = options.freeBytes ?? statfsFree;
  /** Made by this process and not removed: a sweep must not take one whose container is on its way. */
  const mine = new Set<string>();
  let prepared: Promise<void> | undefined;
  /** Admission checks and the truncates they admit run one at a time (two creates cannot both fit). */
  let admitting: Promise<unknown> = Promise.resolve();
  const spares = new Map<string, Spares>();

  function paths(name: string): { image: string; dir: string } {
    if (!NAME.test(name)) throw new SandboxError('INTERNAL', `bad workspace name ${JSON.stringify(name)}`);
    return { image: join(root, `${name}.img`), dir: join(root, name) };
  }

  /** The workspace name of a mount this store made, or undefined for anything else. */
  function nameOf(mount: WorkspaceMount): string | undefined {
    if (mount.type !== 'bind' || !mount.source.startsWith(`${root}/`)) return undefined;
    const name = mount.source.slice(root.length + 1);
    return NAME.test(name) ? name : undefined;
  }

  function prepare(): Promise<void> {
    prepared ??= mkdir(root, { recursive: true, mode: 0o700 }).then(() => chmod(root, 0o700));
    return prepared;
  }

  /** Refuses a workspace the host disk could not hold once every workspace grew to its limit. */
  async function admit(name: string, bytes: number): Promise<void> {
    let growth = bytes;
    for (const file of await readdir(root)) {
      if (!file.endsWith('.img')) continue;
      const s = await stat(join(root, file)).catch(() => undefined);
      if (s) growth += Math.max(0, s.size - s.blocks * 512);
    }
    const free = (await freeBytes(root)) - reserveBytes;
    if (growth > free * overcommit) {
      throw new SandboxError(
        'CAPACITY_EXCEEDED',
        `This host has no disk left for another ${Math.round(bytes / 1024 ** 2)} MiB workspace (the existing ones may still grow into what is free); ask for a smaller one or try later.`,
        { data: { name, bytes, growthBytes: growth, freeBytes: free, overcommit } },
      );
    }
    const file = await open(paths(name).image, 'w', 0o600);
    await file.truncate(bytes).finally(() => file.close());
  }

  /**
   * The sparse image of `name`, admitted (serialised with every other admission). When it does not
   * fit, ready spares give way first, one at a time: they are room held for later, not in use.
   */
  async function admitted(name: string, bytes: number): Promise<void> {
    for (;;) {
      const turn = admitting.then(() => admit(name, bytes));
      admitting = turn.catch(() => {});
      try {
        return await turn;
      } catch (e) {
        const spare = isFull(e) ? anySpare() : undefined;
        if (spare === undefined) throw e;
        await removeOne(spare);
      }
    }
  }

  /** A ready spare of any prefix, taken out of its list. */
  function anySpare(): string | undefined {
    for (const pool of spares.values()) if (pool.ready.length > 0) return pool.ready.pop();
    return undefined;
  }

  async function format(image: string, background = false): Promise<void> {
    await runSystemTool(
      'mkfs.ext4',
      [
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
      ],
      { background },
    );
  }

  /** A ready spare for `name` of `bytes`, out of its list (a refill follows), or undefined. */
  function takeSpare(name: string, bytes: number): string | undefined {
    for (const pool of spares.values()) {
      if (!name.startsWith(`${pool.prefix}-`) || pool.bytes !== bytes) continue;
      const spare = pool.ready.shift();
      refill(pool);
      if (spare !== undefined) return spare;
    }
    return undefined;
  }

  /** One formatted spare image for `pool`; a failed one is removed (never kept half-made). */
  async function makeSpare(pool: Spares): Promise<string> {
    const name = `${pool.prefix}-spare-${nanoid(10).replace(/[^a-zA-Z0-9]/g, 'x')}`;
    mine.add(name);
    try {
      await prepare();
      // Only while the room is there (never by removing other spares).
      const turn = admitting.then(() => admit(name, pool.bytes));
      admitting = turn.catch(() => {});
      await turn;
      // At the lowest priority: a spare is made while a create that took one boots its sandbox.
      await format(paths(name).image, true);
      return name;
    } catch (e) {
      await removeOne(name).catch(() => {});
      throw e;
    }
  }

  /**
   * Single-flight background refill up to `count`; stops at the first failure until the next take.
   * No room for a spare is not a failure: the room is for workspaces in use.
   */
  function refill(pool: Spares): void {
    if (pool.filling || pool.dropped) return;
    pool.filling = (async () => {
      while (!pool.dropped && pool.ready.length < pool.count) {
        const name = await makeSpare(pool);
        if (pool.dropped) await removeOne(name);
        else pool.ready.push(name);
      }
    })()
      .catch((e: unknown) => {
        if (!isFull(e)) pool.onError(e);
      })
      .finally(() => {
        pool.filling = undefined;
      });
  }

  function keepSpares(prefix: string, bytes: number, count: number, onError: (e: unknown) => void): void {
    if (!NAME.test(`${prefix}-spare-x`) || count <= 0 || bytes < MIN_WORKSPACE_BYTES) return;
    const pool: Spares = { prefix, bytes, count, onError, ready: [], filling: undefined, dropped: false };
    const before = spares.get(prefix);
    spares.set(prefix, pool);
    if (before) void dropPool(before);
    refill(pool);
  }

  async function dropPool(pool: Spares): Promise<void> {
    pool.dropped = true;
    await pool.filling;
    for (const name of pool.ready.splice(0)) await removeOne(name).catch(pool.onError);
  }

  async function sparesFilled(prefix: string): Promise<void> {
    await spares.get(prefix)?.filling;
  }

  async function dropSpares(prefix: string): Promise<void> {
    const pool = spares.get(prefix);
    if (!pool) return;
    spares.delete(prefix);
    await dropPool(pool);
  }

  async function mountOne(name: string): Promise<void> {
    const { image, dir } = paths(name);
    if ((await mountedUnder(root)).has(dir)) return;
    if (!existsSync(image))
      throw new SandboxError('SANDBOX_UNAVAILABLE', `The workspace ${name} is gone (no ${image}).`, {
        data: { name },
      });
    await mkdir(dir, { recursive: true, mode: 0o000 });
    await chmod(dir, 0o000);
    try {
      await runSystemTool('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime,discard', image, dir]);
    } catch (e) {
      // Two starts raced: the other one mounted it.
      if ((await mountedUnder(root)).has(dir)) return;
      throw failed('Mounting the workspace', e, { name });
    }
  }

  async function unmountOne(name: string): Promise<void> {
    const { dir } = paths(name);
    if (!(await mountedUnder(root)).has(dir)) return;
    try {
      await runSystemTool('umount', [dir]);
    } catch (e) {
      // Still busy (a container that is being removed): detach now, freed when the last user goes.
      try {
        await runSystemTool('umount', ['--lazy', dir]);
      } catch {
        throw failed('Unmounting the workspace', e, { name });
      }
    }
  }

  async function removeOne(name: string): Promise<void> {
    const { image, dir } = paths(name);
    mine.delete(name);
    for (const pool of spares.values()) {
      const at = pool.ready.indexOf(name);
      if (at >= 0) pool.ready.splice(at, 1);
    }
    await unmountOne(name);
    await rmdir(dir).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'ENOENT') throw e;
    });
    await rm(image, { force: true });
  }

  async function create(
    name: string,
    bytes: number,
    _labels: Record<string, string>,
    alongside?: (mount: Docker.MountSettings) => Promise<unknown>,
  ): Promise<Docker.MountSettings> {
    if (!Number.isSafeInteger(bytes) || bytes < MIN_WORKSPACE_BYTES)
      throw new SandboxError('LIMIT_EXCEEDED', `A workspace needs at least ${MIN_WORKSPACE_BYTES} bytes.`, {
        data: { bytes },
      });
    await prepare();
    const { image, dir } = paths(name);
    const mount: Docker.MountSettings = {
      Type: 'bind',
      Source: dir,
      Target: WORKSPACE_ROOT,
      ReadOnly: false,
    };
    mine.add(name);
    let beside: Promise<unknown> | undefined;
    try {
      // A spare is renamed to this name (taken from the list first: never two takers). One that a
      // sweep removed meanwhile is made afresh instead.
      const spare = takeSpare(name, bytes);
      const fromSpare =
        spare !== undefined &&
        (await rename(paths(spare).image, image).then(
          () => true,
          () => false,
        ));
      if (spare !== undefined) mine.delete(spare);
      // Sparse: the image takes host disk only for what is written; admitted only if it fits.
      if (!fromSpare) await admitted(name, bytes);
      // The mount point exists from here (mode 0000 until mounted): the container can be created.
      await mkdir(dir, { recursive: true, mode: 0o000 });
      await chmod(dir, 0o000);
      beside = alongside?.(mount);
      beside?.catch(() => {});
      if (!fromSpare) await format(image);
      await mountOne(name);
      // mkfs makes lost+found; the agent's workspace starts empty.
      await rmdir(join(dir, 'lost+found')).catch(() => {});
      await beside;
    } catch (e) {
      await beside?.catch(() => {});
      await removeOne(name).catch(() => {});
      throw e instanceof SandboxError ? e : failed('Creating the workspace', e, { name });
    }
    return mount;
  }

  async function ready(mount: WorkspaceMount): Promise<void> {
    const name = nameOf(mount);
    if (name !== undefined) await mountOne(name);
  }

  async function remove(mount: WorkspaceMount): Promise<void> {
    const name = nameOf(mount);
    if (name !== undefined) await removeOne(name);
  }

  async function limitOf(mount: WorkspaceMount): Promise<number | undefined> {
    const name = nameOf(mount);
    if (name === undefined) return undefined;
    return (await stat(paths(name).image).catch(() => undefined))?.size;
  }

  async function usage(mount: WorkspaceMount): Promise<WorkspaceUsage | undefined> {
    const name = nameOf(mount);
    if (name === undefined) return undefined;
    const { dir } = paths(name);
    if (!(await mountedUnder(root)).has(dir)) return undefined;
    const s = await statfs(dir);
    return { usedBytes: (s.blocks - s.bfree) * s.bsize, limitBytes: s.blocks * s.bsize };
  }

  async function exists(mount: WorkspaceMount): Promise<boolean> {
    const name = nameOf(mount);
    return name !== undefined && existsSync(paths(name).image);
  }

  function owns(mount: WorkspaceMount): boolean {
    return nameOf(mount) !== undefined;
  }

  async function sweep(
    keep: Iterable<WorkspaceMount>,
    all = false,
    only: (name: string) => boolean = () => true,
  ): Promise<number> {
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
  }

  return {
    kind: 'loop',
    create,
    ready,
    remove,
    limitOf,
    usage,
    exists,
    owns,
    sweep,
    keepSpares,
    sparesFilled,
    dropSpares,
  };
}
