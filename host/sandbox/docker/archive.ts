// Bulk transfer for container sandboxes, done entirely through sandboxd: an uploaded tar is spooled
// and validated on the host (tar.ts), then written file by file by sandboxd inside the container's
// own mount namespace, each file streamed (write-stream.ts); downloads walk the tree through
// sandboxd and pack only files and directories, reading each file on a stream (sandboxd reads
// ahead one window of credit, returned as the consumer takes bytes), or with an older sandboxd
// with readRange one piece per pull of the consumer (download.ts), so reads stop when the consumer does.
// Why not the Docker archive API: it resolves container paths from the host side (CVE-2018-15664
// class), costs ~110-130 ms per call (dockerd re-execs itself), and would follow symlinks the agent
// planted. Invariant: no host-side operation ever touches a path inside the container.
// This module wires the parts: archive-state.ts holds the options and the reads through the live
// session; archive-download.ts the downloads. Uploads are here.

import { capUpload } from '../chunks.ts';
import { DEFAULT_MAX_DOWNLOAD_BYTES } from '../download.ts';
import { plannedFiles, receiveUpload } from '../tar.ts';
import { extractEntries } from '../tar-extract.ts';
import type { SandboxArchive } from '../types.ts';
import { download, downloadFile } from './archive-download.ts';
import type { ArchiveOptions, ArchiveState } from './archive-state.ts';
import { writeStream } from './write-stream.ts';

export type { ArchiveOptions } from './archive-state.ts';

export const createContainerArchive = (options: ArchiveOptions): SandboxArchive => {
  const s: ArchiveState = {
    options,
    maxDownload: options.maxDownloadBytes ?? DEFAULT_MAX_DOWNLOAD_BYTES,
    maxEntries: options.maxDownloadEntries ?? 100_000,
  };
  return {
    async upload(path, tar, opts = {}) {
      const dir = options.resolve(path);
      const limits = {
        ...(opts.maxBytes === undefined ? {} : { maxBytes: opts.maxBytes }),
        ...(options.spoolDir === undefined ? {} : { spoolDir: options.spoolDir }),
      };
      // Validated in full before apply runs: a hostile archive writes nothing.
      return receiveUpload(tar, limits, async (entries, plan) => {
        await opts.beforeWrite?.(plannedFiles(dir, plan));
        return options.use(({ fs }) =>
          extractEntries(fs, dir, plan, entries, async (target, content, mode) => {
            await writeStream(fs, target, content, { mode });
          }),
        );
      });
    },
    async uploadFile(path, data, opts = {}) {
      const target = options.resolve(path);
      const bytes = await options.use(({ fs }) =>
        writeStream(fs, target, capUpload(data, target, opts.maxBytes)),
      );
      return { path: target, bytes };
    },
    download: (path) => download(s, path),
    downloadFile: (path) => downloadFile(s, path),
  };
};
