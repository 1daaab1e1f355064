// An agent's checkpoint index as a whole file plus the changes made since, one line each
// (./store.ts keeps them as `index.json` and `index.log`). Why: each tracked call changes its index
// twice (an entry made, then completed) and a full index is up to INDEX_MAX_WEIGHT (2 MiB; ~85 KB
// with 256 small entries): written whole each time it was the larger part of a `write` call's
// main-thread time and its disk writes. A change is the oldest entries dropped, entries replaced in
// place and entries added at the end (./index-queue.ts: entries are frozen, so a changed one is a new
// object), the same of the dropped call ids, and the small fields; anything else is written whole.
// Invariants: a line names the generation of the whole file it applies to (a whole write starts a
// new one, then empties the log: a crash between leaves lines of the old generation, which are
// skipped); a line is applied only when it is whole (ends in a newline) and parses, and nothing after
// a line that is not is applied (a crash mid-append leaves at most its own line torn, and the next
// write is a whole one); applying the lines to the whole file gives the index that was written last.
import type { Checkpoint, CheckpointIndex } from './types.ts';

/** What the files hold as written last: the base of the next line. */
export interface Written {
  gen: number;
  entries: readonly Checkpoint[];
  dropped: readonly string[];
  /** Lines and bytes in the log since the whole file was written. */
  lines: number;
  bytes: number;
  /** Bytes of the whole file: the log is written whole again once it outgrows it (or LOG_MAX_LINES). */
  wholeBytes: number;
}

/** Lines the log holds at most before the index is written whole again. */
export const LOG_MAX_LINES = 256;
/** Bytes the log may hold in any case (past the whole file's size): a small index's log is not rewritten often. */
export const LOG_MIN_BYTES = 256 * 1024;

interface Line {
  /** The generation of the whole file. */
  g: number;
  /** The index's fields other than its two arrays. */
  r: Omit<CheckpointIndex, 'entries' | 'dropped'>;
  /** Entries dropped from the front, entries replaced (position after the drop, entry), entries added. */
  k: number;
  s: Array<[number, Checkpoint]>;
  a: Checkpoint[];
  /** The same for the dropped call ids (no replacements). */
  dk: number;
  da: string[];
}

/**
 * How many of `before`'s first items `after` no longer has: the place of `after`'s first item in
 * `before` (all of them when it is not there, or when `after` is empty). Whether the rest agrees is
 * the caller's to check (entries: replacements; dropped ids: must be equal).
 */
function dropFront<T>(before: readonly T[], after: readonly T[]): number {
  const k = after.length === 0 ? -1 : before.indexOf(after[0] as T);
  return k < 0 ? before.length : k;
}

/**
 * The line that turns `base` into `index`, or undefined when it is not such a change (the index is
 * then written whole). `json` makes an entry's JSON (./store.ts reuses a frozen entry's).
 */
export function lineOf(
  base: Written,
  index: CheckpointIndex,
  json: (entry: Checkpoint) => string,
): string | undefined {
  const k = dropFront(base.entries, index.entries);
  const kept = base.entries.length - k;
  if (index.entries.length < kept) return undefined; // entries gone from the middle or the end
  const replaced: string[] = [];
  for (let i = 0; i < kept; i++) {
    const entry = index.entries[i] as Checkpoint;
    if (entry !== base.entries[k + i]) replaced.push(`[${i},${json(entry)}]`);
  }
  const added = index.entries.slice(kept).map(json);
  const dk = dropFront(base.dropped, index.dropped);
  const dkept = base.dropped.length - dk;
  if (index.dropped.length < dkept) return undefined;
  for (let i = 0; i < dkept; i++) if (index.dropped[i] !== base.dropped[dk + i]) return undefined;
  const { entries: _e, dropped: _d, ...rest } = index;
  return `{"g":${base.gen},"r":${JSON.stringify(rest)},"k":${k},"s":[${replaced.join(',')}],"a":[${added.join(',')}],"dk":${dk},"da":${JSON.stringify(index.dropped.slice(dkept))}}\n`;
}

/** The index the whole file and the log's lines of its generation make, and whether a line was torn. */
export function replay(
  whole: CheckpointIndex & { gen?: number },
  log: string,
): { index: CheckpointIndex; gen: number; lines: number; torn: boolean } {
  const { gen = 0, ...index } = whole;
  let current: CheckpointIndex = index;
  let lines = 0;
  let start = 0;
  let torn = false;
  while (start < log.length) {
    const end = log.indexOf('\n', start);
    if (end < 0) {
      torn = true;
      break;
    }
    let line: Line;
    try {
      line = JSON.parse(log.slice(start, end)) as Line;
    } catch {
      torn = true;
      break;
    }
    start = end + 1;
    if (line.g !== gen) continue;
    lines++;
    const entries = current.entries.slice(line.k);
    for (const [i, entry] of line.s) entries[i] = entry;
    entries.push(...line.a);
    current = { ...line.r, entries, dropped: [...current.dropped.slice(line.dk), ...line.da] };
  }
  return { index: current, gen, lines, torn };
}
