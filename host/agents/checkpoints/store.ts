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
// Invariants: the index is replaced whole by rename (a crash leaves the old or the new one, never
// half of one); a blob is written (by rename) before an index that names it; a blob no entry names
// is removed after the index that dropped it was written. The folders this store made are
// remembered (no mkdir per write) until it removes them (remove()). A frozen entry (./index-queue.ts
// freezes every entry it holds) never changes, so its JSON is made once and reused by every later
// write of the index (a full index is ~85 KB: JSON.stringify of it whole cost 0.23 ms, twice per
// tracked call).
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type CheckpointIndex, emptyIndex } from './types.ts';

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

/** JSON.stringify(index), reusing each frozen entry's JSON. */
export function indexJson(index: CheckpointIndex): string {
  const entries = index.entries.map((entry) => {
    let json = entryJson.get(entry);
    if (json === undefined) {
      json = JSON.stringify(entry);
      if (Object.isFrozen(entry)) entryJson.set(entry, json);
    }
    return json;
  });
  const { entries: _, ...rest } = index;
  const head = JSON.stringify(rest);
  return `${head.slice(0, -1)}${head === '{}' ? '' : ','}"entries":[${entries.join(',')}]}`;
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
        return JSON.parse(await readFile(join(folder(agentId), 'index.json'), 'utf8')) as CheckpointIndex;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return emptyIndex();
        throw error;
      }
    },
    async write(agentId, index) {
      await replaceIn(folder(agentId), join(folder(agentId), 'index.json'), indexJson(index));
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
    let text: string;
    try {
      text = await readFile(join(dir, folder, 'index.json'), 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') continue;
      throw error;
    }
    const index = JSON.parse(text) as Partial<CheckpointIndex>;
    if (!Array.isArray(index.entries)) throw new Error(`${join(dir, folder, 'index.json')} has no entries`);
    for (const entry of index.entries)
      if (typeof entry?.snapshot?.id === 'string') held.add(entry.snapshot.id);
  }
  return held;
}
