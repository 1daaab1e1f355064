// The sweep of an instance's snapshot files on a node agent (SandboxNode.sweepSnapshots) over the
// node protocol, in two `sweepSnapshots` steps as adopt takes them: the node names the files of
// the instance's folder untouched for the grace (`drop: 'ask'`: nothing removed), the control
// plane asks its store which of those a record keeps, and sends back the others (`drop: [ids]`),
// which the node removes only if they are, still, old files of that instance's folder.
// Why: a record the control plane dropped (its agent or snapshot deleted, a fork done) whose file
// went with a crash in between, or a copy whose record was never written, stays on the node's disk
// for good otherwise (the control plane's own start sweeps only its embedded node's folder).
// Invariants: the node learns nothing of the store beyond its answer about the node's own files;
// a control plane's list removes only files the node itself judges old, in the folder of the
// instance the request is for (its certificate's), never another instance's or the flat folder;
// a node without snapshots answers SNAPSHOT_UNSUPPORTED (one older than this, INVALID_ARGUMENTS for
// an unknown call): either way nothing is removed.
import { SandboxError } from '../../../errors.ts';
import type { SandboxNode } from '../types.ts';
import { isSnapshotId, snapshotIdOf, stringsOf } from './protocol.ts';
import type { Transport } from './transport.ts';

/** How many ids one `drop` step carries (well under the node's 1 MiB body at 121 characters each). */
const DROP_BATCH = 4000;
/** How long one step may take (it reads and removes files of one folder). */
const SWEEP_MS = 5 * 60_000;

/** The control plane's side: the two steps, the store's word (`recorded`) in between; the ids removed. */
export async function sweepOver(
  t: Pick<Transport, 'call'>,
  recorded: (ids: string[]) => Promise<ReadonlySet<string>>,
): Promise<string[]> {
  const asked = await t.call<{ ids?: unknown }>('sweepSnapshots', { drop: 'ask' }, SWEEP_MS);
  // A node's answer is its word: only snapshot ids are asked about, and no more than a body takes.
  const old = (Array.isArray(asked.ids) ? asked.ids : []).filter(isSnapshotId);
  if (old.length === 0) return [];
  const kept = await recorded(old);
  const drop = old.filter((id) => !kept.has(id));
  const removed: string[] = [];
  for (let i = 0; i < drop.length; i += DROP_BATCH) {
    const done = await t.call<{ removed?: unknown }>(
      'sweepSnapshots',
      { drop: drop.slice(i, i + DROP_BATCH) },
      SWEEP_MS,
    );
    const batch = new Set(drop.slice(i, i + DROP_BATCH));
    if (Array.isArray(done.removed))
      for (const id of done.removed) if (typeof id === 'string' && batch.has(id)) removed.push(id);
  }
  return removed;
}

/** The node's side of one step (server.ts): `drop: 'ask'` lists, a list removes (see the header). */
export async function answerSweep(node: SandboxNode<unknown>, a: Record<string, unknown>): Promise<unknown> {
  const { sweepSnapshots } = node;
  if (sweepSnapshots === undefined)
    throw new SandboxError('SNAPSHOT_UNSUPPORTED', 'This node keeps no workspace snapshots.');
  if (a.drop === 'ask') {
    // A sweep whose record keeps every file: it removes nothing and shows what it would judge.
    let old: string[] = [];
    await sweepSnapshots.call(node, async (ids) => {
      old = ids;
      return new Set(ids);
    });
    return { ids: old };
  }
  const drop = new Set(stringsOf(a.drop, 'drop', DROP_BATCH).map(snapshotIdOf));
  const removed = await sweepSnapshots.call(node, async (ids) => new Set(ids.filter((id) => !drop.has(id))));
  return { removed };
}
