// One agent's checkpoint index, changed one turn at a time: each turn reads the index (from memory
// for the most recently used agents, else from the store), may write it back, and then removes the
// blobs it let go, all before the next turn of that agent starts.
// Invariants: turns of one agent never overlap in this process (the only one that writes the
// agent's folder: its owner), so the index in memory is what is on disk; a turn works on a copy, so
// one that throws halfway changes nothing. The copy is shallow (the index's fields and its two
// arrays): entries are frozen (deeply) once they are in an index this queue holds, so a turn
// replaces an entry it changes and never edits one in place (a deep copy of a full index, 256
// entries and 1,000 dropped ids, cost ~1.3 ms of the main thread per turn, two turns per tracked
// call); a blob is removed only after an index that no longer
// names it was written, and inside the turn, so a later turn that keeps the same bytes again
// (content-addressed: the same name) cannot lose them to an earlier turn's removal.
import type { CheckpointStore } from './store.ts';
import type { Checkpoint, CheckpointIndex } from './types.ts';

/** A snapshot checkpoint's workspace snapshot (Checkpoint.snapshot). */
export type HeldSnapshot = NonNullable<Checkpoint['snapshot']>;

/** Indexes kept in memory (the most recently used agents'), so a tracked call reads none from disk. */
const CACHED_INDEXES = 256;

/** What a turn did: the index to write (none: unchanged), its answer, and the blobs no entry names any more. */
export interface Turn<T> {
  index?: CheckpointIndex;
  value: T;
  release?: Iterable<string>;
  /** Workspace snapshots no entry names any more: deleted once the index is written, like blobs. */
  drop?: Iterable<HeldSnapshot>;
}

export type IndexQueue = {
  turn<T>(agentId: string, work: (index: CheckpointIndex) => Promise<Turn<T>>): Promise<T>;
  /** Forgets the agent's index in memory (its folder is being removed). */
  forget(agentId: string): void;
};

/** Freezes an entry, its files and their pre-images (once: a frozen entry is skipped). */
function freezeEntry(entry: Checkpoint): void {
  if (Object.isFrozen(entry)) return;
  for (const file of entry.files) {
    Object.freeze(file.before);
    Object.freeze(file);
  }
  Object.freeze(entry.files);
  if (entry.snapshot !== undefined) Object.freeze(entry.snapshot);
  Object.freeze(entry);
}

/** The index a turn works on: its own arrays over the same (frozen) entries. */
function copyOf(index: CheckpointIndex): CheckpointIndex {
  return { ...index, entries: [...index.entries], dropped: [...index.dropped] };
}

/** Holds `index` as the agent's: its entries frozen first. */
function held(index: CheckpointIndex): CheckpointIndex {
  for (const entry of index.entries) freezeEntry(entry);
  return index;
}

export function createIndexQueue(
  store: CheckpointStore,
  dropSnapshot: (snapshot: HeldSnapshot) => Promise<void> = async () => undefined,
  /** Told of every index written, once it is on disk (the tenant ledger's count). */
  written: (agentId: string, index: CheckpointIndex) => void = () => undefined,
): IndexQueue {
  const queues = new Map<string, Promise<unknown>>();
  const cached = new Map<string, CheckpointIndex>();

  async function load(agentId: string): Promise<CheckpointIndex> {
    const hit = cached.get(agentId);
    if (hit !== undefined) {
      cached.delete(agentId); // re-inserted: the Map's order is the recency
      cached.set(agentId, hit);
      return hit;
    }
    const index = held(await store.read(agentId));
    cached.set(agentId, index);
    if (cached.size > CACHED_INDEXES) cached.delete(cached.keys().next().value as string);
    return index;
  }

  return {
    turn(agentId, work) {
      const previous = queues.get(agentId) ?? Promise.resolve();
      const turn = previous.then(async () => {
        const { index, value, release, drop } = await work(copyOf(await load(agentId)));
        if (index !== undefined) {
          await store.write(agentId, index);
          cached.set(agentId, held(index));
          written(agentId, index);
        }
        if (release !== undefined) await store.removeBlobs(agentId, release);
        // A snapshot that cannot be deleted now (its node away) is left, never named again.
        for (const held of drop ?? []) await dropSnapshot(held).catch(() => undefined);
        return value;
      });
      const tail = turn.catch(() => undefined);
      queues.set(agentId, tail);
      void tail.then(() => {
        if (queues.get(agentId) === tail) queues.delete(agentId);
      });
      return turn;
    },
    forget: (agentId) => cached.delete(agentId),
  };
}
