// Loop workspaces, the service's default: every workspace is its own ext4 file system in a sparse
// image file `<root>/<name>.img`, loop-mounted (nosuid, nodev, discard) at `<root>/<name>` and
// bind-mounted into the container. A full workspace fails writes with ENOSPC inside that agent only;
// deleted files give their blocks back to the host (discard punches holes in the image). The kernel
// of these machines has no quota support (neither XFS project quotas nor ext4 quotas), so a file
// system per workspace is the limit that works everywhere a root control plane can mount loops
// (probe.ts says whether this machine can).
// This module wires the parts, each in its own module over one LoopState (loop-state.ts: names,
// paths, the root): loop-mount.ts formats, mounts, unmounts and removes a workspace's file system;
// loop-admission.ts admits a new image only when the host disk can hold it (and a tenant's further
// one only while a quarter stays open for tenants that hold none); loop-spares.ts keeps
// formatted spare images ready; loop-snapshots.ts copies a workspace into a snapshot and a snapshot
// into a new workspace; create() and the store's small queries are here.
// One store per root: forInstance(instance) is a view of the same workspaces (one LoopState: one
// admission queue, one set of spares) whose snapshots are in that instance's own folder, for a
// node agent serving several control planes; the store itself keeps the flat folder of `npm start`.
//
// Invariants: the mount point directory is root-owned mode 0000, so a container started while its
// workspace is not mounted (after a reboot) sees an unusable directory instead of writing to the
// host's disk, and `ready()` remounts before every container start; nothing here ever reads or
// writes a path inside a mounted workspace (the host only formats, mounts and unmounts); names are
// checked so that no path leaves `root`; admission checks run one at a time, so two creates cannot
// both take the last room on the host's disk; a sweep never removes a workspace this process made
// and has not removed (its container may be on its way) unless told to (`all`).

import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, rename, rmdir, stat, statfs } from 'node:fs/promises';
import { join, resolve as resolvePath } from 'node:path';
import type Docker from 'dockerode';
import { SandboxError } from '../../../errors.ts';
import { WORKSPACE_ROOT } from '../../paths.ts';
import type { DiskShare, WorkspaceMount, WorkspaceStore, WorkspaceUsage } from '../workspaces.ts';
import { admitsFurther, admitted, checkShare, inTurn } from './loop-admission.ts';
import { failed, format, mountedUnder, mountOne, removeOne } from './loop-mount.ts';
import {
  dropAllSnapshots,
  dropSnapshot,
  snapshotFolder,
  snapshotPath,
  snapshotSizes,
  sparseCopy,
  sweepSnapshots,
  sweepTemps,
  takeSnapshot,
  thawAll,
} from './loop-snapshots.ts';
import { dropSpares, keepSpares, sparesFilled, takeSpare } from './loop-spares.ts';
import { type LoopState, MIN_WORKSPACE_BYTES, NAME, nameOf, paths, prepare } from './loop-state.ts';

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

export function createLoopWorkspaces(rootDir: string, options: LoopOptions = {}): WorkspaceStore {
  const s: LoopState = {
    root: resolvePath(rootDir),
    overcommit: options.overcommit ?? 1,
    reserveBytes: options.reserveBytes ?? 1024 ** 3,
    freeBytes: options.freeBytes ?? statfsFree,
    mine: new Set(),
    prepared: undefined,
    admitting: Promise.resolve(),
    copying: new Set(),
    spares: new Map(),
  };
  return storeOf(s, snapshotFolder(s.root));
}

/** The store over `s` whose snapshots are in `folder` (loop-snapshots.ts snapshotFolder). */
function storeOf(s: LoopState, folder: string): WorkspaceStore {
  return {
    kind: 'loop',
    create: (name, bytes, labels, alongside, from, share) =>
      create(s, folder, name, bytes, labels, alongside, from, share),
    admitsFurther: (bytes) => admitsFurther(s, bytes),
    ready: (mount) => ready(s, mount),
    remove: (mount) => remove(s, mount),
    limitOf: (mount) => limitOf(s, mount),
    usage: (mount) => usage(s, mount),
    exists: (mount) => exists(s, mount),
    owns: (mount) => nameOf(s, mount) !== undefined,
    sweep: (keep, all, only) => sweep(s, folder, keep, all, only),
    keepSpares: (prefix, bytes, count, onError) => keepSpares(s, prefix, bytes, count, onError),
    sparesFilled: (prefix) => sparesFilled(s, prefix),
    dropSpares: (prefix) => dropSpares(s, prefix),
    async snapshot(mount, id, further) {
      const name = nameOf(s, mount);
      if (name === undefined)
        throw new SandboxError(
          'SNAPSHOT_UNSUPPORTED',
          'This workspace is not a loop workspace of this node.',
        );
      return takeSnapshot(s, folder, name, id, further === true ? 'further' : undefined);
    },
    dropSnapshot: (id) => dropSnapshot(folder, id),
    sweepSnapshots: (recorded) => sweepSnapshots(folder, recorded),
    forInstance: (instance) => storeOf(s, snapshotFolder(s.root, instance)),
  };
}

async function create(
  s: LoopState,
  folder: string,
  name: string,
  bytes: number,
  _labels: Record<string, string>,
  alongside?: (mount: Docker.MountSettings) => Promise<unknown>,
  from?: string,
  share?: DiskShare,
): Promise<Docker.MountSettings> {
  if (from !== undefined && (await snapshotSizes(folder, from)).sizeBytes !== bytes)
    throw new SandboxError('INVALID_ARGUMENTS', `A workspace made from snapshot ${from} has its size.`, {
      data: { snapshot: from, bytes },
    });
  if (!Number.isSafeInteger(bytes) || bytes < MIN_WORKSPACE_BYTES)
    throw new SandboxError('LIMIT_EXCEEDED', `A workspace needs at least ${MIN_WORKSPACE_BYTES} bytes.`, {
      data: { bytes },
    });
  await prepare(s);
  const { image, dir } = paths(s, name);
  const mount: Docker.MountSettings = {
    Type: 'bind',
    Source: dir,
    Target: WORKSPACE_ROOT,
    ReadOnly: false,
  };
  s.mine.add(name);
  let beside: Promise<unknown> | undefined;
  try {
    // A spare is renamed to this name (taken from the list first: never two takers). One that a
    // sweep removed meanwhile is made afresh instead.
    const spare = from === undefined ? await spareFor(s, name, bytes, share) : undefined;
    const fromSpare =
      spare !== undefined &&
      (await rename(paths(s, spare).image, image).then(
        () => true,
        () => false,
      ));
    if (spare !== undefined) s.mine.delete(spare);
    // Sparse: the image takes host disk only for what is written; admitted only if it fits.
    if (!fromSpare) await admitted(s, name, bytes, share);
    // The mount point exists from here (mode 0000 until mounted): the container can be created.
    await mkdir(dir, { recursive: true, mode: 0o000 });
    await chmod(dir, 0o000);
    beside = alongside?.(mount);
    beside?.catch(() => {});
    // From a snapshot: its sparse copy (over the admitted image), a file system made already.
    if (from !== undefined) await sparseCopy(snapshotPath(folder, from), image);
    else if (!fromSpare) await format(image);
    await mountOne(s, name);
    // mkfs makes lost+found; the agent's workspace starts empty.
    await rmdir(join(dir, 'lost+found')).catch(() => {});
    await beside;
  } catch (e) {
    await beside?.catch(() => {});
    await removeOne(s, name).catch(() => {});
    throw e instanceof SandboxError ? e : failed('Creating the workspace', e, { name });
  }
  return mount;
}

/**
 * A ready spare for `name`, or undefined. A tenant's workspace while others are about takes one
 * only in its turn of admission, past the reserve's check (ready spares count as open there).
 */
function spareFor(s: LoopState, name: string, bytes: number, share?: DiskShare): Promise<string | undefined> {
  if (share === undefined) return Promise.resolve(takeSpare(s, name, bytes));
  return inTurn(s, async () => {
    await checkShare(s, bytes, share);
    return takeSpare(s, name, bytes);
  });
}

async function ready(s: LoopState, mount: WorkspaceMount): Promise<void> {
  const name = nameOf(s, mount);
  if (name !== undefined) await mountOne(s, name);
}

async function remove(s: LoopState, mount: WorkspaceMount): Promise<void> {
  const name = nameOf(s, mount);
  if (name !== undefined) await removeOne(s, name);
}

async function limitOf(s: LoopState, mount: WorkspaceMount): Promise<number | undefined> {
  const name = nameOf(s, mount);
  if (name === undefined) return undefined;
  return (await stat(paths(s, name).image).catch(() => undefined))?.size;
}

async function usage(s: LoopState, mount: WorkspaceMount): Promise<WorkspaceUsage | undefined> {
  const name = nameOf(s, mount);
  if (name === undefined) return undefined;
  const { dir } = paths(s, name);
  if (!(await mountedUnder(s.root)).has(dir)) return undefined;
  const fs = await statfs(dir);
  return { usedBytes: (fs.blocks - fs.bfree) * fs.bsize, limitBytes: fs.blocks * fs.bsize };
}

async function exists(s: LoopState, mount: WorkspaceMount): Promise<boolean> {
  const name = nameOf(s, mount);
  return name !== undefined && existsSync(paths(s, name).image);
}

async function sweep(
  s: LoopState,
  folder: string,
  keep: Iterable<WorkspaceMount>,
  all = false,
  only: (name: string) => boolean = () => true,
): Promise<number> {
  const kept = new Set<string>();
  for (const m of keep) {
    const name = nameOf(s, m);
    if (name !== undefined) kept.add(name);
  }
  // A process that ended while it froze a workspace for a snapshot left it frozen: thawed here (at
  // adoption), so that its agent's writes do not wait for good.
  if (!all) await thawAll(s, kept);
  // And the temporary file of a snapshot it was copying (loop-snapshots.ts sweepTemps).
  if (!all) await sweepTemps(folder).catch(() => 0);
  let removed = 0;
  const files = await readdir(s.root).catch(() => [] as string[]);
  for (const file of files) {
    if (!file.endsWith('.img')) continue;
    const name = file.slice(0, -4);
    if (!NAME.test(name) || kept.has(name) || !only(name) || (s.mine.has(name) && !all)) continue;
    await removeOne(s, name);
    removed++;
  }
  if (all) await dropAllSnapshots(folder);
  return removed;
}
