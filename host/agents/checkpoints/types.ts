// The shapes of checkpoints per mutating call (./tracker.ts keeps them, ./rollback.ts uses them):
// before a tracked file call runs, each file it names is kept as it was (its bytes and mode, or
// "absent"); once it ran, what it left (a sha256, or "absent"), so a rollback can tell a later
// untracked change (bash, a job, a client) from the call's own.

/** A file as a tracked call found it, before it ran. */
export type PreImage =
  /** There was no file at the path. */
  | { kind: 'absent' }
  /** A regular file: its bytes are the blob `sha256` of the agent's store. */
  | { kind: 'file'; sha256: string; mode: number; size: number }
  /** Not kept: a directory, or a file larger than the agent's byte bound (the rollback refuses past it). */
  | { kind: 'unkept'; reason: string };

/** What a file's state hashes to: the sha256 of its bytes, or 'absent'. */
export type StateHash = string;

export interface FileChange {
  /** Absolute, confined path in the sandbox. */
  path: string;
  before: PreImage;
  /** What the call left; undefined while it runs (or when the service stopped before it ended). */
  after?: StateHash;
}

export interface Checkpoint {
  callId: string;
  /** The tool (write, edit, str_replace_editor), `archive_upload`, `file_upload` or `checkpoint` (a mark). */
  tool: string;
  /** Increasing per agent: the order calls ran in. */
  seq: number;
  /** ms since the epoch. */
  at: number;
  files: FileChange[];
  /** Bytes of the pre-images this entry holds (counted against the agent's byte bound). */
  bytes: number;
  /** A mark's label (the `checkpoint` tool). */
  label?: string;
  /**
   * A workspace snapshot taken just before the call (`bash` and the other untracked mutating tools
   * where the tenant sets `checkpoints.snapshotBash`): its provider id and node, and the workspace's
   * size limit; `bytes` above is its host disk. A rollback across it restores the whole workspace.
   */
  snapshot?: { id: string; node: string; sizeBytes: number };
}

/** One agent's index: its checkpoints oldest first, and the call ids dropped lately. */
export interface CheckpointIndex {
  seq: number;
  entries: Checkpoint[];
  /** Call ids whose checkpoints the bounds dropped (the most recent DROPPED_KEPT), to answer CHECKPOINT_DROPPED. */
  dropped: string[];
  /** The highest seq the bounds dropped (0: none). */
  droppedThrough?: number;
  /** The agent's tenant (written since the tenant quota: ./tenant-ledger.ts counts its bytes by it). */
  tenantId?: string;
}

/** What a rollback goes back to: a call by its id (the newest call of that id), or a checkpoint by its seq. */
export type RollbackTarget = { callId: string } | { seq: number };

/** The bounds of one agent's checkpoints (its tenant's settings, defaults in ../tenant-settings.ts). */
export interface CheckpointBounds {
  /** Bytes of pre-images kept; the oldest checkpoints are dropped past it. */
  maxBytes: number;
  /** Checkpoints kept; the oldest are dropped past it. 0: no tracking. */
  maxCount: number;
  /** A workspace snapshot before each `bash` (and other untracked mutating) call. */
  snapshotBash?: boolean;
  /**
   * Bytes all the tenant's agents' checkpoints keep together on this control plane (its
   * `checkpointBytes` quota, else DSH_TENANT_CHECKPOINT_MAX_BYTES): past it the tenant's oldest
   * are dropped (./tenant-ledger.ts). Undefined: no such bound.
   */
  tenantMaxBytes?: number;
}

/** A checkpoint as the API and the tools show it (no bytes). */
export interface CheckpointView {
  /** Increasing per agent, never reused: names this checkpoint even where call ids repeat. */
  seq: number;
  callId: string;
  tool: string;
  at: string;
  paths: string[];
  bytes: number;
  label?: string;
  /** `snapshot`: a workspace snapshot taken before the call (a rollback across it restores the whole workspace). */
  kind?: 'snapshot';
}

export interface RollbackView {
  /** The call rolled back to: the workspace's tracked files are as they were just before it. */
  callId: string;
  seq: number;
  /** The tracked calls undone, newest first. */
  undone: string[];
  /** Files written back, and files removed (they did not exist before). */
  restored: string[];
  removed: string[];
  /**
   * Where the rollback crossed a snapshot checkpoint: the whole workspace was replaced by that
   * snapshot (its sandbox restarted: processes, /tmp, terminals and jobs gone, as for a pause).
   */
  workspace?: { fromCall: string; lost: string[] };
}

export const emptyIndex = (): CheckpointIndex => ({ seq: 0, entries: [], dropped: [] });

export const viewOf = (entry: Checkpoint): CheckpointView => ({
  seq: entry.seq,
  callId: entry.callId,
  tool: entry.tool,
  at: new Date(entry.at).toISOString(),
  paths: entry.files.map((f) => f.path),
  bytes: entry.bytes,
  ...(entry.label === undefined ? {} : { label: entry.label }),
  ...(entry.snapshot === undefined ? {} : { kind: 'snapshot' as const }),
});

/**
 * A tenant's bounds under the operator's maximum of bytes per agent (DSH_CHECKPOINT_MAX_BYTES; 0:
 * nothing tracked): the control plane's disk holds every tenant's checkpoints beside the store.
 */
export const withinOperator = (bounds: CheckpointBounds, maxBytes: number): CheckpointBounds =>
  maxBytes <= 0 ? { ...bounds, maxCount: 0 } : { ...bounds, maxBytes: Math.min(bounds.maxBytes, maxBytes) };

/**
 * Bounds under the tenant's quota of checkpoint bytes over all its agents (undefined: none; 0:
 * nothing tracked, as the operator's 0): one call's pre-images never take more than all of it.
 */
export const withinTenant = (
  bounds: CheckpointBounds,
  tenantMaxBytes: number | undefined,
): CheckpointBounds => {
  if (tenantMaxBytes === undefined) return bounds;
  if (tenantMaxBytes <= 0) return { ...bounds, maxCount: 0 };
  return { ...bounds, maxBytes: Math.min(bounds.maxBytes, tenantMaxBytes), tenantMaxBytes };
};
