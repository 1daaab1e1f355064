// Snapshots of loop workspaces: a snapshot is a copy of a workspace's image in
// `<root>/.snapshots/<id>.img`, sparse (`cp --sparse=always`; a reflink where the host file system
// offers one, `--reflink=auto`), so it takes host disk only for the blocks in use; a workspace made
// from one starts as a copy of it, made the same way, instead of a freshly formatted image.
// Consistency: while the copy is made the workspace's file system is frozen (FIFREEZE through
// `fsfreeze`, from the host): the kernel first writes everything dirty and commits the journal, so
// the image is a clean file system, and every write inside the sandbox waits in the kernel until
// the thaw (reads go on). A snapshot is what a crash at that instant would have left on disk,
// cleanly unmountable: a file written whole before it is whole, one being written may be partial.
// Invariants: the thaw runs whatever the copy met (and, should the process end in between, at the
// next adoption: thawAll); a snapshot's file is whole before it has its
// name (copied to `<id>.tmp`, then renamed); `.snapshots` starts with a dot, so it is never a
// workspace name (loop-state.ts NAME) and no sweep of workspaces reads it.
// A process that ended mid-copy leaves its `<id>.tmp`, which no snapshot row or checkpoint ever
// names: the adoption's sweep removes such files (sweepTemps) once untouched for TEMP_GRACE_MS. A
// copy in progress writes its file all along, so one written lately may be another process's
// (several instances may share a root) and is left alone. A whole `<id>.img` that no record names
// (its process ended before its snapshot row or checkpoint was written, or after the record was
// dropped but before the file was) is removed by sweepSnapshots, which the start runs over a root
// of its own data directory only (host/agents/service/snapshot-sweep.ts), past the same grace.
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SandboxError } from '../../../errors.ts';
import type { SnapshotFile } from '../workspaces.ts';
import { failed, mountedUnder } from './loop-mount.ts';
import { type LoopState, NAME, paths, prepare } from './loop-state.ts';
import { runSystemTool } from './system-tools.ts';

const folderOf = (s: LoopState): string => join(s.root, '.snapshots');

/** The snapshot's file; INVALID_ARGUMENTS for an id that is not a plain name. */
export function snapshotPath(s: LoopState, id: string): string {
  if (!NAME.test(id))
    throw new SandboxError('INVALID_ARGUMENTS', `bad snapshot id ${JSON.stringify(id).slice(0, 80)}`);
  return join(folderOf(s), `${id}.img`);
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

/** Copies the workspace `name` into the snapshot `id`, its file system frozen meanwhile (see the header). */
export async function takeSnapshot(s: LoopState, name: string, id: string): Promise<SnapshotFile> {
  await prepare(s);
  const { image, dir } = paths(s, name);
  const target = snapshotPath(s, id);
  const temp = `${target.slice(0, -4)}.tmp`;
  await mkdir(folderOf(s), { recursive: true, mode: 0o700 });
  // Not mounted (never started since the host booted): the image is a cleanly unmounted file system.
  const mounted = (await mountedUnder(s.root)).has(dir);
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
  return sizes(target);
}

/** The snapshot's sizes; NOT_FOUND when this node has no such snapshot. */
export async function snapshotSizes(s: LoopState, id: string): Promise<SnapshotFile> {
  try {
    return await sizes(snapshotPath(s, id));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new SandboxError('NOT_FOUND', `This node has no snapshot ${id}.`, { data: { snapshot: id } });
    throw e;
  }
}

/** Deletes a snapshot's file; one already gone is done. */
export async function dropSnapshot(s: LoopState, id: string): Promise<void> {
  await rm(snapshotPath(s, id), { force: true });
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

/** Removes the temporary files of copies that ended with their process (see the header); how many. */
export async function sweepTemps(s: LoopState, now: number = Date.now()): Promise<number> {
  const folder = folderOf(s);
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
 * Removes the snapshot files untouched for TEMP_GRACE_MS whose id `recorded` does not keep (see the
 * header); the ids removed. A failure of `recorded` removes nothing.
 */
export async function sweepSnapshots(
  s: LoopState,
  recorded: (ids: string[]) => Promise<ReadonlySet<string>>,
  now: number = Date.now(),
): Promise<string[]> {
  const folder = folderOf(s);
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
  for (const id of removed) await dropSnapshot(s, id);
  return removed;
}

/** Every snapshot's file (tests tearing down a run). */
export async function dropAllSnapshots(s: LoopState): Promise<void> {
  await rm(folderOf(s), { recursive: true, force: true });
}
