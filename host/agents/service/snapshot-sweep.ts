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
// On remote nodes (DSH_NODES) the same judgement runs over each node agent's folder for this
// instance (sweepNodeSnapshots; nodes/remote/snapshot-sweep.ts carries it): the node names its old
// files, the store says which it keeps, the node removes the others. Replicas share that folder
// (one instance) but not their checkpoint indexes (each its own data dir): with a store replicas
// may share, a checkpoint's file (`ckpt_*`) is kept there, since another replica's index may hold
// it (its replica drops it: agents/checkpoints).
import { resolve } from 'node:path';
import type { SandboxNode } from '../../sandbox/nodes/types.ts';
import { isInside } from '../../sandbox/paths.ts';
import type { SnapshotStore } from '../../store/snapshots.ts';
import { snapshotsHeld } from '../checkpoints/store.ts';
import { CHECKPOINT_SNAPSHOT } from './checkpoint-workspace.ts';

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
  const removed = await sweep(recordedBy(options.snapshots, options.checkpointDir));
  return { kind: 'swept', removed };
}

/**
 * Which of `ids` a record keeps: a snapshot row (whichever tenant's or node's) or an agent's
 * checkpoint index. Both are read before anything goes: a failure of either removes nothing.
 */
export const recordedBy =
  (snapshots: Pick<SnapshotStore, 'recorded'>, checkpointDir: string) =>
  async (ids: string[]): Promise<ReadonlySet<string>> => {
    const [rows, held] = await Promise.all([snapshots.recorded(ids), snapshotsHeld(checkpointDir)]);
    return new Set(ids.filter((id) => rows.has(id) || held.has(id)));
  };

/**
 * The remote nodes' sweep (DSH_NODES; SandboxNode.sweepSnapshots): each node agent removes the
 * files of this instance's own folder there that no record keeps, past the same grace; a node
 * that does not answer is passed over (placement reports it; serve-sandboxes.ts sweeps it again
 * when it answers again). The ids removed.
 */
export async function sweepNodeSnapshots(options: {
  node: Pick<SandboxNode<unknown>, 'sweepSnapshots'>;
  snapshots: Pick<SnapshotStore, 'recorded'>;
  checkpointDir: string;
  /** The store may be shared by replicas (it has leases): every checkpoint's file is kept (see the header). */
  replicas: boolean;
}): Promise<string[]> {
  const { node } = options;
  if (node.sweepSnapshots === undefined) return [];
  const recorded = recordedBy(options.snapshots, options.checkpointDir);
  if (!options.replicas) return node.sweepSnapshots(recorded);
  return node.sweepSnapshots(async (ids) => {
    const kept = new Set(await recorded(ids));
    for (const id of ids) if (id.startsWith(CHECKPOINT_SNAPSHOT)) kept.add(id);
    return kept;
  });
}
