// Reading a tracked file through the agent's ctx.fs: its pre-image before a call (bytes and mode,
// "absent", or not kept) and its state hash after one (sha256, "absent", or a stat stand-in for
// what cannot be read whole), the same way both times so a rollback compares like with like.
import { isSandboxError } from '../../errors.ts';
import type { SandboxFs } from '../../sandbox/types.ts';
import { sha256Of } from './store.ts';
import type { PreImage, StateHash } from './types.ts';

/** A pre-image read, its bytes still in memory (kept by the tracker under its lock). */
export type Captured = { path: string; before: PreImage; bytes?: Buffer };

const absentError = (error: unknown): boolean => isSandboxError(error) && error.code === 'FILE_NOT_FOUND';

/** The file at `path` as it is now; at most `maxBytes` of it are kept (larger: unkept). */
export async function capture(fs: SandboxFs, path: string, maxBytes: number): Promise<Captured> {
  try {
    const { stat, data } = await fs.readWithStat(path, { maxBytes });
    if (stat.type === 'directory') return { path, before: { kind: 'unkept', reason: 'a directory' } };
    if (data === undefined)
      return { path, before: { kind: 'unkept', reason: `${stat.size} bytes, over the agent's bound` } };
    return {
      path,
      before: { kind: 'file', sha256: sha256Of(data), mode: stat.mode & 0o7777, size: data.length },
      bytes: data,
    };
  } catch (error) {
    if (absentError(error)) return { path, before: { kind: 'absent' } };
    if (isSandboxError(error)) return { path, before: { kind: 'unkept', reason: error.code } };
    throw error;
  }
}

/**
 * What `path` hashes to now: its sha256, 'absent', or `stat:` stand-ins for a directory or a file
 * larger than the provider reads in one piece (then a change that keeps its size and mtime passes).
 */
export async function stateOf(fs: SandboxFs, path: string): Promise<StateHash> {
  try {
    const { stat, data } = await fs.readWithStat(path);
    if (data === undefined) return `stat:${stat.type}:${stat.size}:${stat.mtimeMs}`;
    return sha256Of(data);
  } catch (error) {
    if (absentError(error)) return 'absent';
    if (isSandboxError(error)) return `error:${error.code}`;
    throw error;
  }
}
