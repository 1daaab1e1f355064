// Bulk transfer for container sandboxes, done entirely through sandboxd: an uploaded tar is spooled
// and validated on the host (tar.ts), then written file by file by sandboxd inside the container's
// own mount namespace, each file streamed (write-stream.ts); downloads walk the tree through
// sandboxd and pack only files and directories, reading each file on a stream (sandboxd reads
// ahead one window of credit, returned as the consumer takes bytes), or with an older sandboxd
// with readRange one piece per pull of the consumer (download.ts), so reads stop when the consumer does.
// Why not the Docker archive API: it resolves container paths from the host side (CVE-2018-15664
// class), costs ~110-130 ms per call (dockerd re-execs itself), and would follow symlinks the agent
// planted. Invariant: no host-side operation ever touches a path inside the container.

import { SandboxError } from '../../errors.ts';
import { capUpload } from '../chunks.ts';
import {
  DEFAULT_MAX_DOWNLOAD_BYTES,
  DOWNLOAD_PIECE_BYTES,
  downloadTooLarge,
  fileDownload,
  type PiecesFrom,
  type ReadAt,
  readPieces,
} from '../download.ts';
import { relativeTo } from '../paths.ts';
import type { SandboxdFs } from '../sandboxd/client.ts';
import { receiveUpload } from '../tar.ts';
import { extractEntries } from '../tar-extract.ts';
import { type PackEntry, packEntries } from '../tar-pack.ts';
import type { SandboxArchive, SandboxFs } from '../types.ts';
import { writeStream } from './write-stream.ts';

/** The first read of a download when the rest can stream: a small file is still one call. */
const FIRST_PIECE_BYTES = 64 * 1024;

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

export const createContainerArchive = (options: ArchiveOptions): SandboxArchive => {
  const maxDownload = options.maxDownloadBytes ?? DEFAULT_MAX_DOWNLOAD_BYTES;
  const maxEntries = options.maxDownloadEntries ?? 100_000;
  /** Each piece is its own call, so that the session counts a download as busy only while it reads. */
  const readRange = (abs: string, offset: number, length: number) =>
    options.use(({ fs }) => fs.readRange(abs, offset, length));
  const readAt =
    (abs: string): ReadAt =>
    async (offset, length) =>
      (await readRange(abs, offset, length)).data;
  /** Whether the live sandboxd speaks streams (every image since they exist; older ones read in pieces). */
  const canStream = () => options.use(async ({ fs }) => typeof fs.readStream === 'function');
  /**
   * Bytes `from` to `size` of `abs` on one stream of the live session, counted in flight while the
   * consumer iterates (the idle reaper never stops a sandbox mid-download).
   */
  const streamed = (abs: string): PiecesFrom =>
    async function* (from, size) {
      let release = (): void => {};
      const held = new Promise<void>((r) => {
        release = r;
      });
      const fs = await new Promise<SandboxdFs>((resolve, reject) => {
        options
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
  return {
    async upload(path, tar, opts = {}) {
      const dir = options.resolve(path);
      const limits = {
        ...(opts.maxBytes === undefined ? {} : { maxBytes: opts.maxBytes }),
        ...(options.spoolDir === undefined ? {} : { spoolDir: options.spoolDir }),
      };
      // Validated in full before apply runs: a hostile archive writes nothing.
      return receiveUpload(tar, limits, (entries, plan) =>
        options.use(({ fs }) =>
          extractEntries(fs, dir, plan, entries, async (target, content, mode) => {
            await writeStream(fs, target, content, { mode });
          }),
        ),
      );
    },
    async uploadFile(path, data, opts = {}) {
      const target = options.resolve(path);
      const bytes = await options.use(({ fs }) =>
        writeStream(fs, target, capUpload(data, target, opts.maxBytes)),
      );
      return { path: target, bytes };
    },
    async download(path) {
      const abs = options.resolve(path);
      // The walk runs while the tar is read, after download() returned; each read is its own call.
      const fs = new Proxy({} as SandboxFs, {
        get:
          (_, m: keyof SandboxFs) =>
          (...a: unknown[]) =>
            options.use(({ fs: live }) => (live[m] as (...x: unknown[]) => Promise<unknown>)(...a)),
      });
      const top = await fs.stat(abs);
      if (top.type !== 'file' && top.type !== 'directory') {
        throw new SandboxError(
          'NOT_A_FILE',
          `${abs} is a ${top.type}; only files and directories can be downloaded.`,
          { data: { path: abs } },
        );
      }
      const base = top.type === 'directory' ? abs : abs.slice(0, abs.lastIndexOf('/'));
      // First the listing (metadata only), so an oversized download fails before any byte is
      // sent; then the content, streamed chunk by chunk with backpressure.
      const listing: Array<PackEntry & { path: string }> = [];
      let total = 0;
      const add = (
        path: string,
        type: 'file' | 'directory',
        st: { size: number; mode: number; mtimeMs: number },
      ) => {
        if (listing.length >= maxEntries) {
          throw new SandboxError(
            'FILE_TOO_LARGE',
            `Download of ${abs} has more than ${maxEntries} entries; download a smaller directory.`,
          );
        }
        if (type === 'file') total += st.size;
        if (total > maxDownload) throw downloadTooLarge(abs, total, maxDownload);
        const name = type === 'directory' ? `${relativeTo(base, path)}/` : relativeTo(base, path);
        listing.push({
          path,
          name,
          type,
          mode: st.mode,
          mtimeMs: st.mtimeMs,
          size: type === 'file' ? st.size : 0,
        });
      };
      const walk = async (dir: string): Promise<void> => {
        for (const e of await fs.list(dir)) {
          const child = `${dir}/${e.name}`;
          // symlinks and special files are dropped: they never leave the sandbox.
          if (e.type !== 'directory' && e.type !== 'file') continue;
          const st = await fs.stat(child);
          if (st.type !== e.type) continue; // changed under us: skip rather than follow
          add(child, e.type, st);
          if (e.type === 'directory') await walk(child);
        }
      };
      if (top.type === 'file') add(abs, 'file', top);
      else await walk(abs);
      const stream = await canStream();
      // A file that shrank meanwhile ends early and packEntries pads it.
      return packEntries(
        listing.map(({ path, ...entry }) =>
          entry.type === 'file'
            ? {
                ...entry,
                content: () =>
                  stream ? streamed(path)(0, entry.size ?? 0) : readPieces(readAt(path), entry.size ?? 0),
              }
            : entry,
        ),
      );
    },
    async downloadFile(path) {
      const abs = options.resolve(path);
      const stream = await canStream();
      // The first piece comes with the size, so a small file is one call; with streams the rest
      // follows in data frames, so the first piece (base64 in JSON) stays small.
      const first = stream ? FIRST_PIECE_BYTES : DOWNLOAD_PIECE_BYTES;
      const { data, size } = await readRange(abs, 0, first);
      const rest = stream && size > data.length ? { pieces: streamed(abs) } : readAt(abs);
      return fileDownload(abs, size, rest, { first: data, maxBytes: maxDownload });
    },
  };
};
