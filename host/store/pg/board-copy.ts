// The in-memory copy of one team board that pg/team-board.ts's `write` runs its synchronous function
// over: the tasks, the id counter and the tenant's grants loaded under the board's row lock, and
// the changes the function made, for the write to apply before COMMIT.
// Invariants: the copy answers as libsql's statements would inside the transaction: tasks() in id
// order with the function's own changes, fresh objects on every call (changing one changes nothing
// stored); a task is stored as its row would hold it (id = String(seq), no `owner` when none,
// arrays through JSON); update() keeps the task's createdBy and createdAt (libsql's UPDATE does not
// write them) and does nothing to a missing id; insert() of an id already on the board fails as the
// primary key would; nextId() draws the board's next sequence number.
import type { TeamBoardTx, TeamTaskRecord } from '../team-board.ts';

/** What a write's function changed, as rows to write. */
export interface BoardChanges {
  /** Sequence numbers of tasks that were on the board and are gone. */
  removed: number[];
  /** Tasks that were not on the board (in id order). */
  inserted: TeamTaskRecord[];
  /** Tasks that were on the board and differ now (in id order). */
  updated: TeamTaskRecord[];
  /** The counter after the ids drawn. */
  nextSeq: number;
  /** Grants set, by agent id. */
  grants: Map<string, string[]>;
}

const viaJson = <T>(value: T): T => JSON.parse(JSON.stringify(value));

/** The task as its row holds it (and a deep copy). */
const stored = (t: TeamTaskRecord, seq: number): TeamTaskRecord => ({
  id: String(seq),
  subject: t.subject,
  description: t.description,
  status: t.status,
  ...(t.owner === undefined || t.owner === null ? {} : { owner: t.owner }),
  blockedBy: viaJson(t.blockedBy),
  writeScopes: viaJson(t.writeScopes),
  revision: t.revision,
  createdBy: t.createdBy,
  createdAt: t.createdAt,
  updatedAt: t.updatedAt,
});

export const createBoardCopy = (
  tasks: readonly TeamTaskRecord[],
  nextSeq: number,
  grants: Map<string, string[]>,
): { tx: TeamBoardTx; changes(): BoardChanges } => {
  const original = new Map(tasks.map((t) => [Number(t.id), t]));
  const current = new Map(original);
  const touched = new Set<number>();
  const grantsSet = new Map<string, string[]>();
  let next = nextSeq;

  const tx: TeamBoardTx = {
    tasks: () => [...current.entries()].sort(([a], [b]) => a - b).map(([seq, t]) => stored(t, seq)),
    nextId: () => String(next++),
    insert(t) {
      const seq = Number(t.id);
      if (current.has(seq)) throw new Error(`task ${seq} is already on this board (duplicate key)`);
      current.set(seq, stored(t, seq));
      touched.add(seq);
    },
    update(t) {
      const seq = Number(t.id);
      const before = current.get(seq);
      if (before === undefined) return;
      current.set(seq, { ...stored(t, seq), createdBy: before.createdBy, createdAt: before.createdAt });
      touched.add(seq);
    },
    remove(id) {
      const seq = Number(id);
      if (current.delete(seq)) touched.add(seq);
    },
    grantOf: (agentId) => {
      const scopes = grants.get(agentId);
      return scopes === undefined ? undefined : [...scopes];
    },
    setGrant(agentId, scopes) {
      const copy = viaJson([...scopes]);
      grants.set(agentId, copy);
      grantsSet.set(agentId, copy);
    },
  };

  const changes = (): BoardChanges => {
    const result: BoardChanges = { removed: [], inserted: [], updated: [], nextSeq: next, grants: grantsSet };
    for (const seq of [...touched].sort((a, b) => a - b)) {
      const before = original.get(seq);
      const after = current.get(seq);
      if (before === undefined) {
        if (after !== undefined) result.inserted.push(after);
      } else if (after === undefined) result.removed.push(seq);
      else if (JSON.stringify(stored(before, seq)) !== JSON.stringify(after)) result.updated.push(after);
    }
    return result;
  };

  return { tx, changes };
};
