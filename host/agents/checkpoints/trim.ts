// How one agent's index is kept within its bounds: the oldest entries dropped past its count, its
// bytes or its weight, and what they let go (blobs no entry names any more, workspace snapshots).
// Used by ./tracker.ts (an agent's own bounds) and ./tenant-ledger.ts (its tenant's quota).
// Invariant: the entry being made (`keep`) is never dropped; the dropped ids are remembered
// (DROPPED_KEPT) so a rollback to one answers CHECKPOINT_DROPPED, not NOT_FOUND.
import type { HeldSnapshot } from './index-queue.ts';
import type { Checkpoint, CheckpointBounds, CheckpointIndex } from './types.ts';

/** How many dropped call ids an index remembers (to answer CHECKPOINT_DROPPED, not NOT_FOUND). */
export const DROPPED_KEPT = 1000;

/**
 * The most an agent's index may weigh (weightOf: its call ids, labels and paths), past which its
 * oldest entries are dropped as past the byte bound. Why: every tracked call clones and writes the
 * whole index on the service's event loop, and the most recent ones stay in memory; unbounded, an
 * archive of 100,000 long paths made an index of hundreds of MB, each later call a stall of every
 * tenant's requests.
 */
export const INDEX_MAX_WEIGHT = 2 * 1024 * 1024;
/** One call's share of it: a call naming more (an archive of thousands of files) keeps no pre-image. */
export const CALL_MAX_WEIGHT = 1024 * 1024;

const RECORD_WEIGHT = 256;
export const pathsWeight = (paths: readonly string[]): number =>
  paths.reduce((sum, path) => sum + path.length + RECORD_WEIGHT, 0);
/** What an entry adds to its index's JSON, about (paths, hashes and modes of each file, its ids). */
const weightOf = (e: Pick<Checkpoint, 'callId' | 'files' | 'label'>): number =>
  RECORD_WEIGHT + e.callId.length + (e.label?.length ?? 0) + pathsWeight(e.files.map((f) => f.path));

export const blobsOf = (entries: readonly Checkpoint[]): Set<string> => {
  const shas = new Set<string>();
  for (const entry of entries)
    for (const f of entry.files) if (f.before.kind === 'file') shas.add(f.before.sha256);
  return shas;
};

/** Drops the oldest entries past the bounds (never `keep`); the blobs and snapshots no entry names any more. */
export function trim(
  index: CheckpointIndex,
  bounds: CheckpointBounds,
  keep?: Checkpoint,
): { release: Set<string>; drop: HeldSnapshot[] } {
  const dropped: Checkpoint[] = [];
  let bytes = index.entries.reduce((sum, e) => sum + e.bytes, 0);
  let weight = index.entries.reduce((sum, e) => sum + weightOf(e), 0);
  while (
    index.entries.length > 0 &&
    index.entries[0] !== keep &&
    (index.entries.length > bounds.maxCount || bytes > bounds.maxBytes || weight > INDEX_MAX_WEIGHT)
  ) {
    const oldest = index.entries.shift() as Checkpoint;
    bytes -= oldest.bytes;
    weight -= weightOf(oldest);
    dropped.push(oldest);
    index.dropped.push(oldest.callId);
    index.droppedThrough = oldest.seq;
  }
  if (index.dropped.length > DROPPED_KEPT) index.dropped.splice(0, index.dropped.length - DROPPED_KEPT);
  const kept = blobsOf(index.entries);
  return {
    release: new Set([...blobsOf(dropped)].filter((sha) => !kept.has(sha))),
    drop: snapshotsOf(dropped),
  };
}

export const snapshotsOf = (entries: readonly Checkpoint[]): HeldSnapshot[] =>
  entries.flatMap((e) => (e.snapshot === undefined ? [] : [e.snapshot]));
