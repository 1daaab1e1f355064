// Rolling an agent's workspace back to just before a tracked call: that call and every later
// tracked call are undone (newest first in meaning; in effect each file they touched gets the
// pre-image of the oldest of them that touched it, one write per file), and their checkpoints go.
// Refusals, each before anything is written: CHECKPOINT_NOT_FOUND (no checkpoint of that call id),
// CHECKPOINT_DROPPED (it, or a pre-image a later call needs, was dropped or never kept),
// ROLLBACK_UNSAFE (a file to restore is not what the last tracked call left: something untracked,
// bash, a job, a client or a terminal, changed it since, and restoring would lose that change).
// One refusal comes only at the write: ROLLBACK_UNSAFE too for a path something in the sandbox made
// a link out of the workspace, moved away or replaced while the rollback ran (the sandbox never
// follows a link; files before it may be restored already, and asked again the check refuses
// before writing).
// A file that already is what the rollback restores passes the check, so a rollback that failed
// partway (the sandbox went away) can be asked again. Not covered: what untracked tools did (bash)
// to other files stays; directories a tracked call created stay (empty once their files are
// removed). A call id used twice names its newest call.
// Across a snapshot checkpoint (a bash call the tenant had snapshotted, `checkpoints.snapshotBash`)
// the whole workspace goes back: it is replaced by the oldest undone snapshot (its sandbox stopped
// and made again from a copy of it: processes, /tmp, terminals and jobs are lost, as for a pause),
// then the pre-images of the tracked calls undone before that snapshot are written over it; no
// ROLLBACK_UNSAFE check applies there (nothing untracked survives a whole-workspace restore).
import { isSandboxError, SandboxError } from '../../errors.ts';
import type { Sandbox } from '../../sandbox/types.ts';
import { stateOf } from './files.ts';
import type { HeldSnapshot } from './index-queue.ts';
import type { CheckpointTracker } from './tracker.ts';
import { snapshotsOf } from './trim.ts';
import type { Checkpoint, CheckpointIndex, PreImage, RollbackTarget, RollbackView } from './types.ts';

interface Plan {
  /** The pre-image each path gets back (that of the oldest undone call that touched it). */
  targets: Map<string, PreImage>;
  /** What the newest undone call that touched each path left (undefined: it never finished). */
  expected: Map<string, string | undefined>;
}

/** The position of the target's checkpoint (a call id's newest), or the refusal. */
function positionOf(index: CheckpointIndex, target: RollbackTarget): number {
  const matches = (e: Checkpoint | undefined) =>
    'seq' in target ? e?.seq === target.seq : e?.callId === target.callId;
  for (let i = index.entries.length - 1; i >= 0; i--) if (matches(index.entries[i])) return i;
  const named = 'seq' in target ? `checkpoint ${target.seq}` : `call ${target.callId}`;
  const dropped =
    'seq' in target
      ? target.seq >= 1 && target.seq <= (index.droppedThrough ?? 0)
      : index.dropped.includes(target.callId);
  if (dropped)
    throw new SandboxError(
      'CHECKPOINT_DROPPED',
      `The checkpoint of ${named} was dropped (the agent keeps its newest checkpoints within its tenant's bounds); roll back to a later call.`,
      { data: { ...target } },
    );
  throw new SandboxError(
    'CHECKPOINT_NOT_FOUND',
    `No checkpoint of ${named}: only write, edit, str_replace_editor's changes, skill loads, client uploads and checkpoint marks are tracked, and a call rolled back is gone. With several replicas, checkpoints stay with the replica that took them: those taken before the agent moved to this one are not here. GET /v1/agents/:id/checkpoints lists them.`,
    { data: { ...target } },
  );
}

function planOf(undone: readonly Checkpoint[]): Plan {
  const targets = new Map<string, PreImage>();
  const expected = new Map<string, string | undefined>();
  for (const entry of undone) {
    for (const file of entry.files) {
      expected.set(file.path, file.after);
      if (targets.has(file.path)) continue; // an older undone call's pre-image is the one restored
      if (file.before.kind === 'unkept')
        throw new SandboxError(
          'CHECKPOINT_DROPPED',
          `Call ${entry.callId} changed ${file.path}, whose earlier content was not kept (${file.before.reason}); roll back to a call after it.`,
          { data: { callId: entry.callId, path: file.path } },
        );
      targets.set(file.path, file.before);
    }
  }
  return { targets, expected };
}

async function checkUntouched(sandbox: Sandbox, plan: Plan): Promise<void> {
  for (const [path, expected] of plan.expected) {
    if (expected === undefined) continue; // the call never finished: what it left is unknown
    const now = await stateOf(sandbox.fs, path);
    // Already what the rollback restores (a rollback that failed partway, retried): nothing is lost.
    const target = plan.targets.get(path);
    const restored =
      target?.kind === 'absent' ? 'absent' : target?.kind === 'file' ? target.sha256 : undefined;
    if (now !== expected && now !== restored)
      throw new SandboxError(
        'ROLLBACK_UNSAFE',
        `${path} changed after the last tracked call that wrote it (by bash, a job, a terminal or a client), so a rollback would lose that change. Undo it first, or write the file with a tracked tool.`,
        { data: { path } },
      );
  }
}

/** Codes a write answers when its path changed under it: a link out, a directory gone or swapped. */
const RACED = new Set(['PATH_OUTSIDE_WORKSPACE', 'FILE_NOT_FOUND', 'NOT_A_FILE', 'NOT_A_DIRECTORY']);

/**
 * A write the sandbox refused because something in the sandbox changed the path (or a directory
 * above it) between the check and the write: made it a link out of the workspace (the sandbox never
 * follows it), moved its directory away, or put a directory or a file in its way. The client is told
 * the workspace changed (409), not that it asked for a path outside (400) or a missing one (404):
 * retried, the check then refuses with the same code before writing, or the rollback goes through.
 */
function changedMeanwhile(error: unknown, path: string): unknown {
  if (!isSandboxError(error) || !RACED.has(error.code)) return error;
  const how =
    error.code === 'PATH_OUTSIDE_WORKSPACE'
      ? 'it now leads out of the workspace, through a link made by bash, a job or a terminal'
      : 'bash, a job or a terminal moved or replaced it or a directory above it';
  return new SandboxError(
    'ROLLBACK_UNSAFE',
    `${path} changed while the rollback ran (${how}); nothing was written there. Files listed before it may be restored already.`,
    { data: { path }, cause: error },
  );
}

async function restore(tracker: CheckpointTracker, agentId: string, sandbox: Sandbox, plan: Plan) {
  const restored: string[] = [];
  const removed: string[] = [];
  for (const [path, before] of plan.targets) {
    try {
      if (before.kind === 'file') {
        const bytes = await tracker.store.getBlob(agentId, before.sha256);
        await sandbox.fs.writeFile(path, bytes, { mode: before.mode });
        restored.push(path);
      } else if (before.kind === 'absent') {
        await sandbox.fs.remove(path);
        removed.push(path);
      }
    } catch (error) {
      if (before.kind === 'absent' && isSandboxError(error) && error.code === 'FILE_NOT_FOUND') continue;
      throw changedMeanwhile(error, path);
    }
  }
  return { restored, removed };
}

/** What is lost when a rollback replaces the whole workspace (said in its answer). */
export const LOST_ON_RESTORE = ['processes', '/tmp', 'terminals', 'jobs'];

/** Replaces the agent's workspace by a copy of a snapshot; resolves to its new sandbox. */
export type RestoreWorkspace = (snapshot: HeldSnapshot) => Promise<Sandbox>;

/** Restores the agent's tracked files to just before the target; its checkpoints from there on are gone. */
export async function rollback(
  tracker: CheckpointTracker,
  agentId: string,
  sandboxOf: () => Promise<Sandbox>,
  target: RollbackTarget,
  restoreWorkspace?: RestoreWorkspace,
): Promise<RollbackView> {
  return tracker.turn(agentId, async (index) => {
    const at = positionOf(index, target);
    const undone = index.entries.slice(at);
    const s = undone.findIndex((e) => e.snapshot !== undefined);
    const whole = s >= 0 && restoreWorkspace !== undefined ? (undone[s] as Checkpoint) : undefined;
    const plan = planOf(whole === undefined ? undone : undone.slice(0, s));
    let sandbox: Sandbox;
    if (whole === undefined) {
      sandbox = await sandboxOf();
      await checkUntouched(sandbox, plan);
    } else sandbox = await (restoreWorkspace as RestoreWorkspace)(whole.snapshot as HeldSnapshot);
    const { restored, removed } = await restore(tracker, agentId, sandbox, plan);
    const kept = index.entries.slice(0, at);
    const keptBlobs = new Set(
      kept.flatMap((e) => e.files.flatMap((f) => (f.before.kind === 'file' ? [f.before.sha256] : []))),
    );
    const release = new Set(
      undone.flatMap((e) =>
        e.files.flatMap((f) =>
          f.before.kind === 'file' && !keptBlobs.has(f.before.sha256) ? [f.before.sha256] : [],
        ),
      ),
    );
    const { callId, seq } = undone[0] as Checkpoint;
    const value: RollbackView = {
      callId,
      seq,
      undone: undone.map((e) => e.callId).reverse(),
      restored,
      removed,
      ...(whole === undefined ? {} : { workspace: { fromCall: whole.callId, lost: LOST_ON_RESTORE } }),
    };
    return { index: { ...index, entries: kept }, value, release, drop: snapshotsOf(undone) };
  });
}
