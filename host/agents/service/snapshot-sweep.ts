// The start's sweep of workspace snapshot files no record names: `snap_*` (POST …/snapshots: a
// row in store.snapshots), `ckpt_*` (a bash checkpoint: an entry of its agent's checkpoint index
// under the data dir) and `fork_*` (a child's fork: never recorded, dropped once the child's
// workspace is made). A process that ended between making a file and recording it, or between
// dropping its record and its file, left it behind for good; this removes it.
// Invariants: only a workspace root inside this service's data directory is swept (several
// instances may share an engine and, with DSH_WORKSPACES_DIR, a folder, but never a data dir: a
// file there is this instance's); it runs at start, before anything is served, and a file written
// lately is left anyway (maybe one being made, its record not written yet: loop-snapshots.ts);
// a file any snapshot row names (whichever tenant's or node's) or any checkpoint index holds is
// kept; when a record cannot be read (the store, an index), nothing is removed.
import { resolve } from 'node:path';
import { isInside } from '../../sandbox/paths.ts';
import type { SnapshotStore } from '../../store/snapshots.ts';
import { snapshotsHeld } from '../checkpoints/store.ts';

export interface SnapshotSweepOptions {
  /** The workspace store's sweep (WorkspaceStore.sweepSnapshots); undefined: it keeps no snapshot files. */
  sweep: ((recorded: (ids: string[]) => Promise<ReadonlySet<string>>) => Promise<string[]>) | undefined;
  snapshots: Pick<SnapshotStore, 'recorded'>;
  /** The service's data directory, and the workspace store's root (swept only when inside it). */
  dataDir: string;
  workspacesDir: string;
  /** Where the agents' checkpoint indexes live (`<data dir>/checkpoints`). */
  checkpointDir: string;
}

/** What a sweep did: the ids removed, or why it did not run. */
export type SnapshotSweep =
  /** Ran (or had nothing to sweep: workspaces without snapshot files): these files no record named are gone. */
  | { kind: 'swept'; removed: string[] }
  /** Not run: the root is outside the data directory (another instance may share it). */
  | { kind: 'skipped'; reason: string };

export async function sweepOrphanSnapshots(options: SnapshotSweepOptions): Promise<SnapshotSweep> {
  const { sweep } = options;
  if (sweep === undefined) return { kind: 'swept', removed: [] };
  if (!isInside(resolve(options.dataDir), resolve(options.workspacesDir)))
    return {
      kind: 'skipped',
      reason: `${options.workspacesDir} is outside the data directory (another instance may share it)`,
    };
  const removed = await sweep(async (ids) => {
    // Both read before anything goes: a failure of either removes nothing.
    const [rows, held] = await Promise.all([
      options.snapshots.recorded(ids),
      snapshotsHeld(options.checkpointDir),
    ]);
    return new Set(ids.filter((id) => rows.has(id) || held.has(id)));
  });
  return { kind: 'swept', removed };
}
