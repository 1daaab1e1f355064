// A private temporary file on the host for one upload, so that an upload can be checked in full
// before anything is written without being held in memory. Invariants: the file is created
// exclusively (never an existing path, never through a planted symlink) with mode 0600 under a
// name from crypto randomness, and it is removed when the callback settles, whatever happened
// (a failed check, a failed write, a client that went away).

import { randomBytes } from 'node:crypto';
import { type FileHandle, mkdir, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SpoolFile {
  /** Absolute path of the spool file. */
  readonly path: string;
  /** Open for reading and writing; closed by withSpool. */
  readonly handle: FileHandle;
}

/** Name prefix of every spool file (tests look for it). */
export const SPOOL_PREFIX = 'dsh-upload-';

/** Runs `fn` with a fresh spool file in `dir` (made 0700 if missing; default the OS temp directory), then removes it. */
export const withSpool = async <T>(
  dir: string | undefined,
  fn: (spool: SpoolFile) => Promise<T>,
): Promise<T> => {
  if (dir !== undefined) await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir ?? tmpdir(), `${SPOOL_PREFIX}${randomBytes(16).toString('hex')}`);
  const handle = await open(path, 'wx+', 0o600);
  try {
    return await fn({ path, handle });
  } finally {
    await handle.close().catch(() => {});
    await rm(path, { force: true });
  }
};
