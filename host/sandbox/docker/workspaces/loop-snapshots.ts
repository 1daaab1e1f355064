// Snapshots of loop workspaces: a snapshot is a copy of a workspace's image in `<folder>/<id>.img`,
// sparse (`cp --sparse=always`; a reflink where the host file system offers one, `--reflink=auto`),
// so it takes host disk only for the blocks in use; a workspace made from one starts as a copy of
// it, made the same way, instead of a freshly formatted image.
// Folders (snapshotFolder): a store's own snapshots are in `<root>/.snapshots` (the embedded node of
// `npm start`, as before instances had folders); a node agent serving several control-plane
// instances gives each its own, `<root>/.snapshots/<instance>` (loop.ts forInstance), and every
// call here takes the folder it acts in, so one instance's ensure-from, snapshot, drop and sweep
// never name another's file (there is no id that leaves its folder: ids are plain names). Files
// left flat in `.snapshots` on a node agent by a version before the folders are nobody's: no
// instance's folder holds them until the operator gives each to its instance (loop-unassigned.ts).
// Consistency: while the copy is made the workspace's file system is frozen (FIFREEZE through
// `fsfreeze`, from the host): the kernel first writes everything dirty and commits the journal, so
// the image is a clean file system, and every write inside the sandbox waits in the kernel until
// the thaw (reads go on). A snapshot is what a crash at that instant would have left on disk,
// cleanly unmountable: a file written whole before it is whole, one being written may be partial.
// Invariants: the thaw runs whatever the copy met (and, should the process end in between, at the
// next adoption: thawAll); a snapshot's file is whole before it has its
// name (copied to `<id>.tmp`, then renamed); `.snapshots` starts with a dot, so it is never a
// workspace name (loop-state.ts NAME) and no sweep of workspaces reads it; an instance's folder is
// named by an instance id (no dot), so it is never a snapshot's or a temporary file's name either.
// A process that ended mid-copy leaves its `<id>.tmp`, which no snapshot row or checkpoint ever
// names: the adoption's sweep removes such files in its own folder (sweepTemps) once untouched for
// TEMP_GRACE_MS. A copy in progress writes its file all along, so one written lately may be another
// process's (replicas share a folder) and is left alone. A whole `<id>.img` that no record names
// (its process ended before its snapshot row or checkpoint was written, or after the record was
// dropped but before the file was) is removed by sweepSnapshots, past the same grace: the start runs
// it over the flat folder of a root of its own data directory (host/agents/service/snapshot-sweep.ts),
// and a control plane on a node agent over its instance's folder there (nodes/remote/snapshot-sweep.ts);
// it reads the files of its folder alone, never an instance's folder within it. The flat folder's
// temporary files on a node agent (an older version's) are the node agent's start's (serve-node.ts).
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SandboxError } from '../../../errors.ts';
import { INSTANCE_ID, INSTANCE_ID_TEXT } from '../../nodes/remote/roles.ts';
import type { SnapshotFile } from '../workspaces.ts';
import { admittedCopy } from './loop-admission.ts';
import { failed, mountedUnder } from './loop-mount.ts';
import { type LoopState, NAME, paths, prepare } from './loop-state.ts';
import { runSystemTool } from './system-tools.ts';

/**
 * The folder of the snapshots of a store at `root`: `<root>/.snapshots`, or `instance`'s own within
 * it (see the header); CONFIG_INVALID for an instance that is not an instance id.
 */
export function snapshotFolder(root: string, instance?: string): string {
  const flat = join(root, '.snapshots');
  if (instance === undefined) return flat;
  if (!INSTANCE_ID.test(instance))
    throw new SandboxError(
      'CONFIG_INVALID',
      `A snapshot folder is named by an instance id (${INSTANCE_ID_TEXT}), got ${JSON.stringify(instance).slice(0, 80)}.`,
    );
  return join(flat, instance);
}

/** The snapshot's file in `folder`; INVALID_ARGUMENTS for an id that is not a plain name. */
export function snapshotPath(folder: string, id: string): string {
  if (!NAME.test(id))
    throw new SandboxError('INVALID_ARGUMENTS', `bad snapshot id ${JSON.stringify(id).slice(0, 80)}`);
  return join(folder, `${id}.img`);
}

/** A sparse copy of `from` at `to` (a reflink where the file system offers one). */
export async function sparseCopy(from: string, to: string): Promise<void> {
  await runSystemTool('cp', ['--sparse=always', '--reflink=auto', '--', from, to]);
}

/** Size limit and host disk of an image. */
async function sizes(file: string): Promise<SnapshotFile> {
  const st = await stat(file);
  return { sizeBytes: st.size, bytes: st.blocks * 512 };
}

/** Copies the workspace `name` into the snapshot `id` of `folder`, its file system frozen meanwhile (see the header). */
export async function takeSnapshot(
  s: LoopState,
  folder: string,
  name: string,
  id: string,
  share?: 'further',
): Promise<SnapshotFile> {
  await prepare(s);
  const { image, dir } = paths(s, name);
  const target = snapshotPath(folder, id);
  const temp = `${target.slice(0, -4)}.tmp`;
  await mkdir(folder, { recursive: true, mode: 0o700 });
  // What the copy will take: the image's blocks in use now (the few a write lands before the freeze
  // are the margin). Admitted like a workspace (loop-admission.ts), or refused with nothing frozen
  // or copied.
  const used = await sizes(image).then(
    (sz) => sz.bytes,
    (e: unknown) => {
      throw failed('Taking the snapshot', e, { name, snapshot: id });
    },
  );
  // Not mounted (never started since the host booted): the image is a cleanly unmounted file system.
  const mounted = (await mountedUnder(s.root)).has(dir);
  await admittedCopy(s, { temp, target }, used, share, async () => {
    try {
      if (mounted) await runSystemTool('fsfreeze', ['--freeze', dir]);
      try {
        await sparseCopy(image, temp);
      } finally {
        if (mounted) await runSystemTool('fsfreeze', ['--unfreeze', dir]);
      }
      await rename(temp, target);
    } catch (e) {
      await rm(temp, { force: true });
      throw e instanceof SandboxError ? e : failed('Taking the snapshot', e, { name, snapshot: id });
    }
  });
  return sizes(target);
}

/** The snapshot's sizes; NOT_FOUND when `folder` has no such snapshot (another instance's folder may). */
export async function snapshotSizes(folder: string, id: string): Promise<SnapshotFile> {
  try {
    return await sizes(snapshotPath(folder, id));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new SandboxError('NOT_FOUND', `This node has no snapshot ${id}.`, { data: { snapshot: id } });
    throw e;
  }
}

/** Deletes a snapshot's file in `folder`; one already gone (or never there) is done. */
export async function dropSnapshot(folder: string, id: string): Promise<void> {
  await rm(snapshotPath(folder, id), { force: true });
}

/** Thaws the mounted workspaces of `names` that a snapshot left frozen; one that is not frozen is left as it is. */
export async function thawAll(s: LoopState, names: Iterable<string>): Promise<void> {
  const mounted = await mountedUnder(s.root);
  for (const name of names) {
    const { dir } = paths(s, name);
    if (mounted.has(dir)) await runSystemTool('fsfreeze', ['--unfreeze', dir]).catch(() => undefined);
  }
}

/** How long a snapshot's temporary file must be untouched before a sweep takes it for a crash's. */
export const TEMP_GRACE_MS = 10 * 60_000;

/** Removes the temporary files in `folder` of copies that ended with their process (see the header); how many. */
export async function sweepTemps(folder: string, now: number = Date.now()): Promise<number> {
  const files = await readdir(folder).catch(() => [] as string[]);
  let removed = 0;
  for (const file of files) {
    if (!file.endsWith('.tmp') || !NAME.test(file.slice(0, -4))) continue;
    const at = (await stat(join(folder, file)).catch(() => undefined))?.mtimeMs;
    if (at === undefined || now - at < TEMP_GRACE_MS) continue;
    await rm(join(folder, file), { force: true });
    removed++;
  }
  return removed;
}

/**
 * Removes the snapshot files of `folder` untouched for TEMP_GRACE_MS whose id `recorded` does not
 * keep (see the header); the ids removed. A failure of `recorded` removes nothing. Folders within
 * it (instances') are not snapshots: never read.
 */
export async function sweepSnapshots(
  folder: string,
  recorded: (ids: string[]) => Promise<ReadonlySet<string>>,
  now: number = Date.now(),
): Promise<string[]> {
  const files = await readdir(folder).catch(() => [] as string[]);
  const old: string[] = [];
  for (const file of files) {
    const id = file.slice(0, -4);
    if (!file.endsWith('.img') || !NAME.test(id)) continue;
    // Written lately: maybe one being made, its record not written yet.
    const at = (await stat(join(folder, file)).catch(() => undefined))?.mtimeMs;
    if (at !== undefined && now - at >= TEMP_GRACE_MS) old.push(id);
  }
  if (old.length === 0) return [];
  const kept = await recorded(old);
  const removed = old.filter((id) => !kept.has(id));
  for (const id of removed) await dropSnapshot(folder, id);
  return removed;
}

/** `folder` and every file in it (tests tearing down a run: the flat folder takes the instances' with it). */
export async function dropAllSnapshots(folder: string): Promise<void> {
  await rm(folder, { recursive: true, force: true });
}
