// Snapshot files a node agent kept before each control-plane instance had its own folder
// (loop-snapshots.ts): flat in `<root>/.snapshots`, the instance that took each unknown, so no
// instance is served them (another instance could otherwise read or drop them). The operator lists
// them and gives each to the instance whose snapshot row names it (`dsh-sandbox node snapshots`,
// host/cli-node.ts; docs/nodes.md "Snapshots of several instances"): the file moves into that
// instance's folder, where that instance alone finds it.
// Invariants: a move never replaces a file in the instance's folder (a hard link to the new name
// first, which fails on a name taken, then the flat name removed), so an assignment cannot
// overwrite an instance's snapshot; ids and instances are checked as everywhere (no path leaves
// the root); every id is checked before the first one moves.
import { link, mkdir, readdir, stat, unlink } from 'node:fs/promises';
import { SandboxError } from '../../../errors.ts';
import { snapshotFolder, snapshotPath } from './loop-snapshots.ts';
import { NAME } from './loop-state.ts';

/** The ids of the flat snapshot files under `root`, sorted: those served to no instance. */
export async function unassignedSnapshots(root: string): Promise<string[]> {
  const files = await readdir(snapshotFolder(root), { withFileTypes: true }).catch(() => []);
  return files
    .filter((f) => f.isFile() && f.name.endsWith('.img') && NAME.test(f.name.slice(0, -4)))
    .map((f) => f.name.slice(0, -4))
    .sort();
}

const exists = (file: string): Promise<boolean> =>
  stat(file).then(
    () => true,
    () => false,
  );

/**
 * Moves the flat snapshots `ids` into `instance`'s folder (see the header). NOT_FOUND for an id
 * with no flat file, CONFLICT for one the instance already holds: then nothing moves.
 */
export async function assignSnapshots(root: string, instance: string, ids: string[]): Promise<void> {
  const flat = snapshotFolder(root);
  const own = snapshotFolder(root, instance);
  for (const id of ids) {
    if (!(await exists(snapshotPath(flat, id))))
      throw new SandboxError('NOT_FOUND', `No unassigned snapshot ${id} in ${flat}.`, {
        data: { snapshot: id },
      });
    if (await exists(snapshotPath(own, id)))
      throw new SandboxError(
        'CONFLICT',
        `Instance ${instance} already has a snapshot ${id}; nothing moved.`,
        {
          data: { snapshot: id, instance },
        },
      );
  }
  await mkdir(own, { recursive: true, mode: 0o700 });
  for (const id of ids) {
    await link(snapshotPath(flat, id), snapshotPath(own, id)).catch((e: NodeJS.ErrnoException) => {
      // Taken since the check (the instance snapshotted that id meanwhile): its file stays.
      if (e.code !== 'EEXIST') throw e;
      throw new SandboxError('CONFLICT', `Instance ${instance} already has a snapshot ${id}.`, {
        data: { snapshot: id, instance },
      });
    });
    await unlink(snapshotPath(flat, id));
  }
}
