// Checkpoints per mutating call: before a tracked call (write, edit, str_replace_editor's
// mutating commands, a client's file or archive upload) runs, the pre-image of every file it names
// is read through the agent's ctx.fs and kept (./store.ts); once it ran, what it left is hashed
// into the same entry. Each agent's checkpoints are bounded by its tenant's settings (bytes of
// pre-images and count), the oldest dropped first. `checkpoint` marks (an entry with no files)
// give the model a place to return to. Rollback is ./rollback.ts.
// Invariants: an entry is written (with its blobs) before its call runs, so a pre-image is durable
// before the file changes; every change of an agent's index happens in one of that agent's turns
// (./index-queue.ts; one process owns an agent: with replicas, its family's owner); a call whose pre-images
// cannot be read is not run untracked: the error is the call's. A pre-image that does not fit the
// byte bound is recorded as unkept, so a rollback through it refuses instead of restoring half; so
// is a call naming more files than one checkpoint holds (CALL_MAX_WEIGHT), and the index as a whole
// stays within INDEX_MAX_WEIGHT (the oldest entries dropped), whatever the tenant's bounds. Past
// the tenant's quota of bytes over all its agents (CheckpointBounds.tenantMaxBytes), the tenant's
// oldest are dropped once the entry is written (./tenant-ledger.ts); that never fails the call.
// An agent forgotten (deleted, or its family moved) while a call of it was keeping its pre-images
// gets no entry from that call: it would write the index and blobs of an agent whose folder was
// just removed, kept on disk (and counted in its tenant's bytes) with no deletion left to remove it.
import { SandboxError } from '../../errors.ts';
import type { Sandbox } from '../../sandbox/types.ts';
import { type Captured, capture, stateOf } from './files.ts';
import { createIndexQueue, type HeldSnapshot, type IndexQueue, type Turn } from './index-queue.ts';
import type { CheckpointStore } from './store.ts';
import { createTenantLedger, type TenantLedger } from './tenant-ledger.ts';
import { blobsOf, CALL_MAX_WEIGHT, pathsWeight, snapshotsOf, trim } from './trim.ts';
import type { Checkpoint, CheckpointBounds, CheckpointIndex, CheckpointView } from './types.ts';
import { viewOf } from './types.ts';

export { CALL_MAX_WEIGHT, DROPPED_KEPT, INDEX_MAX_WEIGHT, trim } from './trim.ts';

export interface TrackedCall {
  callId: string;
  tool: string;
  /** The paths it writes, as the call named them (resolved and confined here; ones outside are skipped). */
  paths: readonly string[];
}

export interface CheckpointTracker {
  /** Runs `run` with the files of `call` checkpointed around it. */
  track<T>(
    tenantId: string,
    agentId: string,
    sandbox: Sandbox,
    call: TrackedCall,
    run: () => Promise<T>,
  ): Promise<T>;
  /** track() in two halves: keeps the pre-images now, resolves to what records what the call left. */
  begin(tenantId: string, agentId: string, sandbox: Sandbox, call: TrackedCall): Promise<() => Promise<void>>;
  /**
   * A snapshot checkpoint of an untracked call (bash), where the tenant's bounds ask for one
   * (`snapshotBash`): `take` copies the workspace; one larger than the byte bound is deleted and
   * not kept (a rollback across the call then refuses as without the setting).
   */
  snapshot(
    tenantId: string,
    agentId: string,
    call: Omit<TrackedCall, 'paths'>,
    take: TakeSnapshot,
  ): Promise<void>;
  /** A mark with no files (the `checkpoint` tool): rolling back to it undoes every tracked call after it. */
  mark(tenantId: string, agentId: string, callId: string, label?: string): Promise<CheckpointView>;
  /** The agent's checkpoints, oldest first. */
  list(agentId: string): Promise<CheckpointView[]>;
  /** Runs `work` in the agent's next turn (./index-queue.ts): its index written, its blobs released. */
  turn<T>(agentId: string, work: (index: CheckpointIndex) => Promise<Turn<T>>): Promise<T>;
  readonly store: CheckpointStore;
  /** Drops everything of the agent (its deletion). */
  forget(agentId: string): Promise<void>;
  /** Bytes the tenant's agents' checkpoints hold on this control plane (its `checkpointBytes` quota's usage). */
  tenantBytes(tenantId: string): Promise<number>;
}

/** Copies the agent's workspace into a new snapshot: the snapshot and the host disk it takes. */
export type TakeSnapshot = () => Promise<{ snapshot: HeldSnapshot; bytes: number }>;

export interface TrackerOptions {
  store: CheckpointStore;
  /** Deletes a snapshot checkpoint's workspace snapshot (dropped, rolled back, or its agent gone). */
  dropSnapshot?: (snapshot: HeldSnapshot) => Promise<void>;
  boundsOf: (tenantId: string) => Promise<CheckpointBounds>;
  now?: () => number;
}

/**
 * A call naming more files than one checkpoint holds: none is read, the entry names the first as
 * unkept, so a rollback to it or across it refuses (CHECKPOINT_DROPPED) and later calls still roll back.
 */
function tooMany(sandbox: Sandbox, paths: readonly string[]): Captured[] {
  for (const raw of paths) {
    try {
      const reason = `${paths.length} files, more than one checkpoint keeps`;
      return [{ path: sandbox.fs.resolve(raw), before: { kind: 'unkept', reason } }];
    } catch {}
  }
  return [];
}

/** The pre-images of `paths`, all of them together within `maxBytes` (past it: unkept). */
async function captureAll(sandbox: Sandbox, paths: readonly string[], maxBytes: number): Promise<Captured[]> {
  const out: Captured[] = [];
  const seen = new Set<string>();
  let left = maxBytes;
  for (const raw of paths) {
    let path: string;
    try {
      path = sandbox.fs.resolve(raw);
    } catch {
      continue; // outside the workspace: the call itself fails on it
    }
    if (seen.has(path)) continue;
    seen.add(path);
    const taken = await capture(sandbox.fs, path, Math.max(0, left));
    if (taken.bytes !== undefined) left -= taken.bytes.length;
    out.push(taken);
  }
  return out;
}

/**
 * The tenant's quota, after the agent's turn (a drop is a turn of the agent holding it): a failure
 * to drop leaves the tenant over it until its next call, and never fails this one.
 */
async function withinQuota(
  ledger: TenantLedger,
  queue: IndexQueue,
  at: { tenantId: string; agentId: string; made: Checkpoint; bounds: CheckpointBounds },
): Promise<void> {
  const { tenantMaxBytes } = at.bounds;
  if (tenantMaxBytes === undefined || at.made.bytes === 0) return;
  const keep = { agentId: at.agentId, seq: at.made.seq };
  await ledger.fit(at.tenantId, tenantMaxBytes, keep, queue.turn).catch(() => undefined);
}

/**
 * The agents forgotten while calls of theirs were between their start and their entry's write:
 * `during` counts such a call, `forgot` marks its agent, `stale` says its entry must not be written.
 */
function createForgetMarks() {
  const pending = new Map<string, number>();
  const forgotten = new Set<string>();
  return {
    async during<T>(agentId: string, work: () => Promise<T>): Promise<T> {
      pending.set(agentId, (pending.get(agentId) ?? 0) + 1);
      try {
        return await work();
      } finally {
        const left = (pending.get(agentId) ?? 1) - 1;
        if (left > 0) pending.set(agentId, left);
        else {
          pending.delete(agentId);
          forgotten.delete(agentId); // kept only while one of its calls may still write
        }
      }
    },
    forgot(agentId: string): void {
      if (pending.has(agentId)) forgotten.add(agentId);
    },
    stale: (agentId: string): boolean => forgotten.has(agentId),
  };
}

/** Records in the call's entry what the call left (none once the entry was dropped or rolled back). */
async function finish(queue: IndexQueue, agentId: string, entry: Checkpoint, sandbox: Sandbox) {
  const after = new Map<string, string>();
  for (const f of entry.files) after.set(f.path, await stateOf(sandbox.fs, f.path));
  await queue.turn(agentId, async (index) => {
    const at = index.entries.findIndex((e) => e.seq === entry.seq);
    const kept = index.entries[at];
    if (kept === undefined) return { value: undefined }; // dropped (or rolled back) meanwhile
    // Entries held by the queue are frozen: the entry is replaced, not edited (./index-queue.ts).
    index.entries[at] = { ...kept, files: kept.files.map((f) => ({ ...f, after: after.get(f.path) })) };
    return { index, value: undefined };
  });
}

const goneError = (agentId: string): SandboxError =>
  new SandboxError('NOT_FOUND', `Agent ${agentId} was deleted.`, { data: { agentId } });

export function createCheckpointTracker(options: TrackerOptions): CheckpointTracker {
  const { store, boundsOf } = options;
  const now = options.now ?? Date.now;
  const ledger = createTenantLedger(store);
  const queue = createIndexQueue(store, options.dropSnapshot, ledger.written);
  const marks = createForgetMarks();

  /** Appends `entry` (its blobs first), trims to the bounds, removes the blobs it let go; none once its agent was forgotten. */
  async function append(
    tenantId: string,
    agentId: string,
    entry: Omit<Checkpoint, 'seq'>,
    captured: Captured[],
    bounds: CheckpointBounds,
  ): Promise<Checkpoint | undefined> {
    const made = await queue.turn(agentId, async (index): Promise<Turn<Checkpoint | undefined>> => {
      if (marks.stale(agentId)) return { value: undefined };
      // A blob an entry of the index names is on disk (written before that index, removed only
      // once no entry names it): the same pre-image again (a file written or edited back to what
      // it was) is not written again.
      const named = blobsOf(index.entries);
      for (const c of captured)
        if (c.bytes !== undefined && !(c.before.kind === 'file' && named.has(c.before.sha256)))
          await store.putBlob(agentId, c.bytes);
      const full: Checkpoint = { ...entry, seq: ++index.seq };
      index.entries.push(full);
      index.tenantId = tenantId;
      return { index, value: full, ...trim(index, bounds, full) };
    });
    if (made !== undefined) await withinQuota(ledger, queue, { tenantId, agentId, made, bounds });
    return made;
  }

  async function begin(tenantId: string, agentId: string, sandbox: Sandbox, call: TrackedCall) {
    const bounds = await boundsOf(tenantId);
    if (bounds.maxCount <= 0 || call.paths.length === 0) return async () => undefined;
    // A rollback runs in a turn and restores files there: the pre-images are read after the turns
    // queued before this call (a rollback already under way), never from a half-restored workspace.
    // (A rollback cannot start while a batch runs: ROLLBACK_BUSY.)
    await queue.turn(agentId, async () => ({ value: undefined }));
    const captured =
      pathsWeight(call.paths) > CALL_MAX_WEIGHT
        ? tooMany(sandbox, call.paths)
        : await captureAll(sandbox, call.paths, bounds.maxBytes);
    const bytes = captured.reduce((sum, c) => sum + (c.bytes?.length ?? 0), 0);
    const files = captured.map((c) => ({ path: c.path, before: c.before }));
    const entry = await append(
      tenantId,
      agentId,
      { callId: call.callId, tool: call.tool, at: now(), files, bytes },
      captured,
      bounds,
    );
    if (entry === undefined) throw goneError(agentId);
    // What the call left, even when it failed (a failed call may have written part of it).
    return () => finish(queue, agentId, entry, sandbox).catch(() => undefined);
  }

  return {
    store,
    turn: queue.turn,
    begin: (tenantId, agentId, sandbox, call) =>
      marks.during(agentId, () => begin(tenantId, agentId, sandbox, call)),
    async track(tenantId, agentId, sandbox, call, run) {
      const end = await marks.during(agentId, () => begin(tenantId, agentId, sandbox, call));
      try {
        return await run();
      } finally {
        await end();
      }
    },
    snapshot: (tenantId, agentId, call, take) =>
      marks.during(agentId, async () => {
        const bounds = await boundsOf(tenantId);
        if (bounds.snapshotBash !== true || bounds.maxCount <= 0) return;
        const { snapshot, bytes } = await take();
        const entry = { callId: call.callId, tool: call.tool, at: now(), files: [], bytes, snapshot };
        // One larger than the byte bound, or of an agent forgotten meanwhile, is not kept.
        if (bytes > bounds.maxBytes || (await append(tenantId, agentId, entry, [], bounds)) === undefined)
          await options.dropSnapshot?.(snapshot).catch(() => undefined);
      }),
    mark: (tenantId, agentId, callId, label) =>
      marks.during(agentId, async () => {
        const bounds = await boundsOf(tenantId);
        const entry = await append(
          tenantId,
          agentId,
          {
            callId,
            tool: 'checkpoint',
            at: now(),
            files: [],
            bytes: 0,
            ...(label === undefined ? {} : { label }),
          },
          [],
          { ...bounds, maxCount: Math.max(1, bounds.maxCount) },
        );
        if (entry === undefined) throw goneError(agentId);
        return viewOf(entry);
      }),
    list: (agentId) => queue.turn(agentId, async (index) => ({ value: index.entries.map(viewOf) })),
    forget: (agentId) =>
      queue.turn(agentId, async (index) => {
        marks.forgot(agentId);
        queue.forget(agentId);
        ledger.forget(agentId);
        await store.remove(agentId);
        return { value: undefined, drop: snapshotsOf(index.entries) };
      }),
    tenantBytes: (tenantId) => ledger.bytes(tenantId),
  };
}
