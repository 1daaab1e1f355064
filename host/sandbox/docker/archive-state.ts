// What the parts of a container sandbox's archive share (archive.ts wires them): its options and
// limits, and how a download reads through the live session. Each read is its own call on the
// session (options.use), so the session counts a download as busy only while it reads, and a
// streamed read holds its call until the consumer stops (the idle reaper never stops a sandbox
// mid-download).

import { SandboxError } from '../../errors.ts';
import type { PiecesFrom, ReadAt } from '../download.ts';
import type { SandboxdFs } from '../sandboxd/client.ts';

export interface ArchiveOptions {
  /** Runs one operation on the live session (through sandboxd), counted as in flight. */
  use: <T>(fn: (session: { fs: SandboxdFs }) => Promise<T>) => Promise<T>;
  /** Confines a path (paths.ts). */
  resolve: (path: string) => string;
  /** Largest download in bytes. Default 1 GiB. */
  maxDownloadBytes?: number;
  /** Most entries (files and directories) in one download. Default 100 000. */
  maxDownloadEntries?: number;
  /** Where uploaded archives are spooled on the host while they are checked. Default: the OS temp directory. */
  spoolDir?: string;
}

export interface ArchiveState {
  options: ArchiveOptions;
  /** Largest download in bytes. */
  maxDownload: number;
  /** Most entries in one download. */
  maxEntries: number;
}

/** Each piece is its own call, so that the session counts a download as busy only while it reads. */
export const readRange = (s: ArchiveState, abs: string, offset: number, length: number) =>
  s.options.use(({ fs }) => fs.readRange(abs, offset, length));
export const readAt =
  (s: ArchiveState, abs: string): ReadAt =>
  async (offset, length) =>
    (await readRange(s, abs, offset, length)).data;
/** Whether the live sandboxd speaks streams (every image since they exist; older ones read in pieces). */
export const canStream = (s: ArchiveState) =>
  s.options.use(async ({ fs }) => typeof fs.readStream === 'function');
/**
 * Bytes `from` to `size` of `abs` on one stream of the live session, counted in flight while the
 * consumer iterates (the idle reaper never stops a sandbox mid-download).
 */
export const streamed = (s: ArchiveState, abs: string): PiecesFrom =>
  async function* (from, size) {
    let release = (): void => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const fs = await new Promise<SandboxdFs>((resolve, reject) => {
      s.options
        .use(({ fs: live }) => {
          resolve(live);
          return held;
        })
        .catch(reject);
    });
    try {
      if (!fs.readStream) throw new SandboxError('SANDBOX_PROTOCOL', 'sandboxd stopped speaking streams.');
      yield* fs.readStream(abs, from, size - from);
    } finally {
      release();
    }
  };
