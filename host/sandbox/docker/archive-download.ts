// Downloads from a container sandbox, through sandboxd only: a tree is walked (list, then stat of
// each entry) and packed as a tar of files and directories; symlinks and special files never leave
// the sandbox, and an entry whose type changed under the walk is skipped rather than followed. The
// listing comes first (metadata only), so an oversized download fails before any byte is sent.
// Each file is read on a stream, or with an older sandboxd in readRange pieces.

import { SandboxError } from '../../errors.ts';
import { DOWNLOAD_PIECE_BYTES, downloadTooLarge, fileDownload, readPieces } from '../download.ts';
import { relativeTo } from '../paths.ts';
import { type PackEntry, packEntries } from '../tar-pack.ts';
import type { SandboxArchive, SandboxFs } from '../types.ts';
import { type ArchiveState, canStream, readAt, readRange, streamed } from './archive-state.ts';

/** The first read of a download when the rest can stream: a small file is still one call. */
const FIRST_PIECE_BYTES = 64 * 1024;

export async function download(s: ArchiveState, path: string): ReturnType<SandboxArchive['download']> {
  const abs = s.options.resolve(path);
  // The walk runs while the tar is read, after download() returned; each read is its own call.
  const fs = new Proxy({} as SandboxFs, {
    get:
      (_, m: keyof SandboxFs) =>
      (...a: unknown[]) =>
        s.options.use(({ fs: live }) => (live[m] as (...x: unknown[]) => Promise<unknown>)(...a)),
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
    if (listing.length >= s.maxEntries) {
      throw new SandboxError(
        'FILE_TOO_LARGE',
        `Download of ${abs} has more than ${s.maxEntries} entries; download a smaller directory.`,
      );
    }
    if (type === 'file') total += st.size;
    if (total > s.maxDownload) throw downloadTooLarge(abs, total, s.maxDownload);
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
  const stream = await canStream(s);
  // A file that shrank meanwhile ends early and packEntries pads it.
  return packEntries(
    listing.map(({ path, ...entry }) =>
      entry.type === 'file'
        ? {
            ...entry,
            content: () =>
              stream ? streamed(s, path)(0, entry.size ?? 0) : readPieces(readAt(s, path), entry.size ?? 0),
          }
        : entry,
    ),
  );
}

export async function downloadFile(
  s: ArchiveState,
  path: string,
): ReturnType<SandboxArchive['downloadFile']> {
  const abs = s.options.resolve(path);
  const stream = await canStream(s);
  // The first piece comes with the size, so a small file is one call; with streams the rest
  // follows in data frames, so the first piece (base64 in JSON) stays small.
  const first = stream ? FIRST_PIECE_BYTES : DOWNLOAD_PIECE_BYTES;
  const { data, size } = await readRange(s, abs, 0, first);
  const rest = stream && size > data.length ? { pieces: streamed(s, abs) } : readAt(s, abs);
  return fileDownload(abs, size, rest, { first: data, maxBytes: s.maxDownload });
}
