// Bulk transfer for container sandboxes, done entirely through sandboxd: the tar is parsed and
// validated on the host (tar.ts), then written file by file by sandboxd inside the container's own
// mount namespace; downloads walk the tree through sandboxd and pack only files and directories.
// Why not the Docker archive API: it resolves container paths from the host side (CVE-2018-15664
// class), costs ~110-130 ms per call (dockerd re-execs itself), and would follow symlinks the agent
// planted. Invariant: no host-side operation ever touches a path inside the container.

import { SandboxError } from '../../errors.ts';
import { relativeTo } from '../paths.ts';
import { packEntries, readUpload, type PackEntry } from '../tar.ts';
import type { SandboxArchive, SandboxFs } from '../types.ts';

export interface ArchiveOptions {
  /** The live fs (through sandboxd) of the sandbox, fetched per operation. */
  fs: () => Promise<SandboxFs>;
  /** Confines a path (paths.ts). */
  resolve: (path: string) => string;
  /** Largest download in bytes. Default 1 GiB. */
  maxDownloadBytes?: number;
}

export const createContainerArchive = (options: ArchiveOptions): SandboxArchive => {
  const maxDownload = options.maxDownloadBytes ?? 1024 * 1024 * 1024;
  return {
    async upload(path, tar, opts = {}) {
      const dir = options.resolve(path);
      // Validate everything first: a hostile archive writes nothing.
      const entries = await readUpload(tar, opts.maxBytes === undefined ? {} : { maxBytes: opts.maxBytes });
      const fs = await options.fs();
      if ((await fs.exists(dir)) && (await fs.stat(dir)).type !== 'directory') {
        throw new SandboxError('NOT_A_DIRECTORY', `Upload target ${dir} is not a directory.`, { data: { path: dir } });
      }
      await fs.mkdir(dir, { recursive: true });
      let files = 0;
      let bytes = 0;
      for (const e of entries) {
        const target = options.resolve(e.name === '' ? dir : `${dir}/${e.name}`);
        if (e.type === 'directory') await fs.mkdir(target, { recursive: true });
        else {
          await fs.writeFile(target, e.data ?? Buffer.alloc(0), { mode: e.mode });
          files++;
          bytes += e.data?.length ?? 0;
        }
      }
      return { files, bytes };
    },
    async download(path) {
      const abs = options.resolve(path);
      const fs = await options.fs();
      const top = await fs.stat(abs);
      if (top.type !== 'file' && top.type !== 'directory') {
        throw new SandboxError('NOT_A_FILE', `${abs} is a ${top.type}; only files and directories can be downloaded.`, { data: { path: abs } });
      }
      const base = top.type === 'directory' ? abs : abs.slice(0, abs.lastIndexOf('/'));
      let total = 0;
      async function* walk(dir: string): AsyncGenerator<PackEntry> {
        for (const e of await fs.list(dir)) {
          const child = `${dir}/${e.name}`;
          if (e.type === 'directory') {
            const st = await fs.stat(child);
            yield { name: `${relativeTo(base, child)}/`, type: 'directory', mode: st.mode, mtimeMs: st.mtimeMs };
            yield* walk(child);
          } else if (e.type === 'file') {
            yield await file(child);
          }
          // symlinks and special files are dropped: they never leave the sandbox.
        }
      }
      async function file(p: string): Promise<PackEntry> {
        const st = await fs.stat(p);
        total += st.size;
        if (total > maxDownload) throw new SandboxError('FILE_TOO_LARGE', `Download of ${abs} exceeds ${maxDownload} bytes; download a smaller directory.`);
        const data = st.size === 0 ? Buffer.alloc(0) : await fs.readFile(p, { offset: 0, length: st.size });
        return { name: relativeTo(base, p), type: 'file', mode: st.mode, mtimeMs: st.mtimeMs, data };
      }
      async function* all(): AsyncGenerator<PackEntry> {
        if (top.type === 'file') yield await file(abs);
        else yield* walk(abs);
      }
      return packEntries(all());
    },
  };
};
