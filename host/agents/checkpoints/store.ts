// Where checkpoints are kept: files under the service's data directory, one folder per agent
// (`<dir>/<agent>/index.json` and `<dir>/<agent>/blobs/<sha256>`), not store rows. Why: pre-images
// are bulk bytes (up to the agent's byte bound, 64 MiB by default) with a short, bounded life;
// in the store they would grow the session database, its backups and replication traffic, and
// compete with the event log's writer for every edit. Blobs are content-addressed, so the same
// bytes kept by several calls (a file edited back and forth) are stored once, and dropping the
// oldest checkpoint is an unlink. The cost, said in docs/api.md: with replicas, checkpoints live on
// the replica that owns the agent's family; after a takeover the new owner has none (a rollback to an
// older call answers CHECKPOINT_NOT_FOUND, its message saying so), and the former owner drops its
// copy once it learns the family moved (the agent service's release), so a later move back finds
// none either. Left: a former owner that stopped before it learned keeps its copy, and uses it
// again should the family come back to it (a rollback then still refuses over any file changed
// since: ROLLBACK_UNSAFE).
// The index is `index.json`, written whole by rename (a crash leaves the old or the new one, never
// half of one), plus `index.log`, the changes since, a line each (./index-log.ts: a tracked call's
// two changes are its own entry, not two copies of the whole index); the log is written whole again
// past LOG_MAX_LINES or the whole file's size, and after any change that is not a line's.
// Invariants: what read() returns is the index written last; a blob is written (by rename) before an index that names it; a blob no entry names
// is removed after the index that dropped it was written. The folders this store made are
// remembered (no mkdir per write) until it removes them (remove()). A frozen entry (./index-queue.ts
// freezes every entry it holds) never changes, so its JSON is made once and reused by every later
// write of the index (a full index is ~85 KB: JSON.stringify of it whole cost 0.23 ms, twice per
// tracked call).
import { createHash, randomInt, randomUUID } from 'node:crypto';
import { appendFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LOG_MAX_LINES, LOG_MIN_BYTES, lineOf, replay, type Written } from './index-log.ts';
import { type Checkpoint, type CheckpointIndex, emptyIndex } from './types.ts';

export interface CheckpointStore {
  read(agentId: string): Promise<CheckpointIndex>;
  write(agentId: string, index: CheckpointIndex): Promise<void>;
  /** Keeps `bytes` (once per content); resolves to their sha256. */
  putBlob(agentId: string, bytes: Uint8Array): Promise<string>;
  getBlob(agentId: string, sha256: string): Promise<Buffer>;
  removeBlobs(agentId: string, sha256s: Iterable<string>): Promise<void>;
  /** Everything of the agent (its deletion). */
  remove(agentId: string): Promise<void>;
  /** The agents with a folder here (an id that is not a plain name: its hash), for ./tenant-ledger.ts's count at start. */
  agents?(): Promise<string[]>;
}

export const sha256Of = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** The JSON of frozen entries, by identity (made at a write, reused while the entry is held). */
const entryJson = new WeakMap<object, string>();

/** An entry's JSON, made once for a frozen one. */
const jsonOf = (entry: Checkpoint): string => {
  let json = entryJson.get(entry);
  if (json === undefined) {
    json = JSON.stringify(entry);
    if (Object.isFrozen(entry)) entryJson.set(entry, json);
  }
  return json;
};

/** JSON.stringify(index), reusing each frozen entry's JSON. */
export function indexJson(index: CheckpointIndex): string {
  const entries = index.entries.map(jsonOf);
  const { entries: _, ...rest } = index;
  const head = JSON.stringify(rest);
  return `${head.slice(0, -1)}${head === '{}' ? '' : ','}"entries":[${entries.join(',')}]}`;
}

/** Agents whose files this store remembers as written (./index-log.ts Written); past it, a write is whole. */
const WRITTEN_KEPT = 256;

/** Remembers what an agent's files hold as written last (the most recently written agents'); undefined forgets. */
function rememberIn(written: Map<string, Written>, agentId: string, state: Written | undefined): void {
  written.delete(agentId);
  if (state === undefined) return;
  written.set(agentId, state);
  if (written.size > WRITTEN_KEPT) written.delete(written.keys().next().value as string);
}

/** A line is appended while the log stays within its bounds; else the index is written whole. */
const fits = (base: Written, line: string): boolean =>
  base.lines < LOG_MAX_LINES && base.bytes + line.length <= Math.max(LOG_MIN_BYTES, base.wholeBytes);

/** The index in an agent's folder: its whole file and its log's lines (./index-log.ts). */
async function readIndexIn(path: string): Promise<{
  index: CheckpointIndex;
  gen: number;
  lines: number;
  torn: boolean;
  wholeBytes: number;
  logBytes: number;
}> {
  const text = await readFile(join(path, 'index.json'), 'utf8');
  const log = await readFile(join(path, 'index.log'), 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return '';
    throw error;
  });
  const whole = JSON.parse(text) as CheckpointIndex & { gen?: number };
  if (!Array.isArray(whole.entries) || !Array.isArray(whole.dropped))
    throw new Error(`${join(path, 'index.json')} is not a checkpoint index`);
  return { ...replay(whole, log), wholeBytes: text.length, logBytes: log.length };
}

const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;
const HEX = /^[0-9a-f]{64}$/;

/** The checkpoints of each agent under `dir` (created on first write, mode 0700). */
export function createCheckpointStore(dir: string): CheckpointStore {
  // An id that is not a plain name cannot reach outside `dir`: it is hashed instead.
  const folder = (agentId: string) =>
    join(dir, SAFE_ID.test(agentId) ? agentId : sha256Of(Buffer.from(agentId)));
  const blob = (agentId: string, sha: string) => {
    if (!HEX.test(sha)) throw new Error(`not a blob name: ${sha}`);
    return join(folder(agentId), 'blobs', sha);
  };
  const written = new Map<string, Written>();
  const remember = (agentId: string, state: Written | undefined) => rememberIn(written, agentId, state);
  /** Folders made (or found) by this store, so a write makes none again. */
  const made = new Set<string>();
  async function made0700(path: string): Promise<void> {
    if (made.has(path)) return;
    await mkdir(path, { recursive: true, mode: 0o700 });
    made.add(path);
  }
  async function replace(path: string, data: Uint8Array | string): Promise<void> {
    const temporary = `${path}.${randomUUID()}.tmp`;
    await writeFile(temporary, data, { mode: 0o600 });
    await rename(temporary, path);
  }
  /** replace() in `parent`, made first; a folder removed behind this store's back is made again. */
  async function replaceIn(parent: string, path: string, data: Uint8Array | string): Promise<void> {
    await made0700(parent);
    try {
      await replace(path, data);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      made.delete(parent);
      await made0700(parent);
      await replace(path, data);
    }
  }
  return {
    async read(agentId) {
      try {
        const read = await readIndexIn(folder(agentId));
        remember(
          agentId,
          read.torn
            ? undefined
            : {
                gen: read.gen,
                entries: [...read.index.entries],
                dropped: [...read.index.dropped],
                lines: read.lines,
                bytes: read.logBytes,
                wholeBytes: read.wholeBytes,
              },
        );
        return read.index;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return emptyIndex();
        throw error;
      }
    },
    async write(agentId, index) {
      const path = folder(agentId);
      const base = written.get(agentId);
      const line = base === undefined ? undefined : lineOf(base, index, jsonOf);
      if (base !== undefined && line !== undefined && fits(base, line)) {
        try {
          await appendFile(join(path, 'index.log'), line, { mode: 0o600 });
          remember(agentId, {
            ...base,
            entries: [...index.entries],
            dropped: [...index.dropped],
            lines: base.lines + 1,
            bytes: base.bytes + line.length,
          });
          return;
        } catch (error) {
          written.delete(agentId);
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
      // Whole: a new generation, then the log emptied (its lines name the old one: skipped if left).
      // Random, not the next number: the generation on disk is not known here after a torn log.
      const gen = randomInt(1, 2 ** 47);
      const head = indexJson(index);
      const text = `{"gen":${gen},${head.slice(1)}`;
      written.delete(agentId);
      await replaceIn(path, join(path, 'index.json'), text);
      await writeFile(join(path, 'index.log'), '', { mode: 0o600 });
      remember(agentId, {
        gen,
        entries: [...index.entries],
        dropped: [...index.dropped],
        lines: 0,
        bytes: 0,
        wholeBytes: text.length,
      });
    },
    async putBlob(agentId, bytes) {
      const sha = sha256Of(bytes);
      await replaceIn(join(folder(agentId), 'blobs'), blob(agentId, sha), bytes);
      return sha;
    },
    getBlob: (agentId, sha) => readFile(blob(agentId, sha)),
    async removeBlobs(agentId, shas) {
      for (const sha of shas) await rm(blob(agentId, sha), { force: true });
    },
    async remove(agentId) {
      written.delete(agentId);
      const path = folder(agentId);
      made.delete(path);
      made.delete(join(path, 'blobs'));
      await rm(path, { recursive: true, force: true });
    },
    agents: () => foldersIn(dir),
  };
}

/** The folders under `dir` (none when it does not exist yet). */
const foldersIn = (dir: string): Promise<string[]> =>
  readdir(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [] as string[];
    throw error;
  });

/**
 * The workspace snapshots every agent's index under `dir` holds (Checkpoint.snapshot), for the
 * start's sweep of snapshot files no record names. An index that cannot be read or parsed throws:
 * the sweep then removes nothing rather than a snapshot it could not see was held.
 */
export async function snapshotsHeld(dir: string): Promise<Set<string>> {
  const held = new Set<string>();
  for (const folder of await foldersIn(dir)) {
    let index: CheckpointIndex;
    try {
      index = (await readIndexIn(join(dir, folder))).index;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') continue;
      throw error;
    }
    for (const entry of index.entries)
      if (typeof entry?.snapshot?.id === 'string') held.add(entry.snapshot.id);
  }
  return held;
}
