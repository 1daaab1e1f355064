// The memory provider: an in-process double of the SandboxProvider port for unit tests. Files live
// in a Map; exec and jobs run only through an injected `run` collaborator (no fake shell). Never use
// it for untrusted work: flags.isolated is false.
// Invariant: at most one sandbox (one fs) per agent id; handles returned by create/get share it.

import type { Readable } from 'node:stream';
import { nanoid } from 'nanoid';
import { SandboxError } from '../../errors.ts';
import { capUpload, collect } from '../chunks.ts';
import { fileDownload, type ReadAt, readPieces } from '../download.ts';
import { relativeTo } from '../paths.ts';
import { plannedFiles, receiveUpload } from '../tar.ts';
import { extractEntries } from '../tar-extract.ts';
import { packEntries } from '../tar-pack.ts';
import type { ProviderFlags, Sandbox, SandboxArchive, SandboxLimits, SandboxProvider } from '../types.ts';
import { createMemoryExec, type MemoryRun } from './exec.ts';
import { createMemoryFs, type MemoryFs } from './fs.ts';
import { createMemoryJobs } from './jobs.ts';

export type { MemoryProcess, MemoryRun } from './exec.ts';

export const MEMORY_DEFAULT_LIMITS: SandboxLimits = {
  memoryBytes: 512 * 1024 * 1024,
  nanoCpus: 1e9,
  pids: 256,
  maxReadBytes: 10 * 1024 * 1024,
  maxOutputBytes: 1024 * 1024,
};

export interface MemoryProviderOptions {
  /** Runs exec and job commands; without it they reject with SANDBOX_UNAVAILABLE. */
  run?: MemoryRun;
  /** Workspace root. Default '/workspace'. */
  root?: string;
  /** Default MEMORY_DEFAULT_LIMITS; a spec's limits override per agent. */
  limits?: Partial<SandboxLimits>;
  /** Clock. Default Date.now. */
  now?: () => number;
}

export interface MemorySandbox extends Sandbox {
  readonly fs: MemoryFs;
  readonly limits: SandboxLimits;
}

/** Ranged reads of a file's bytes as they are now (a later write replaces them, never changes them). */
const readerOf =
  (data: Buffer): ReadAt =>
  async (offset, length) =>
    data.subarray(offset, offset + length);

const createArchive = (fs: MemoryFs): SandboxArchive => ({
  // The same receiving path as the docker provider (spooled, validated in full, then replayed);
  // only the last step keeps each file in memory, where this provider keeps files anyway.
  async upload(path, tar: Readable, options = {}) {
    const dir = fs.resolve(path);
    const limits = options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes };
    return receiveUpload(tar, limits, async (entries, plan) => {
      await options.beforeWrite?.(plannedFiles(dir, plan));
      return extractEntries(fs, dir, plan, entries, async (target, content, mode) =>
        fs.writeFile(target, await collect(content), { mode }),
      );
    });
  },
  async uploadFile(path, data, options = {}) {
    const target = fs.resolve(path);
    const content = await collect(capUpload(data, target, options.maxBytes));
    await fs.writeFile(target, content);
    return { path: target, bytes: content.length };
  },
  async download(path) {
    const abs = fs.resolve(path);
    const st = await fs.stat(abs);
    const base = st.type === 'directory' ? abs : abs.slice(0, abs.lastIndexOf('/')) || '/';
    // Like the docker provider: entries below the directory, not the directory itself.
    const entries = fs
      .entries(abs)
      .filter((e) => e.path !== base)
      .map((e) => {
        const rel = relativeTo(base, e.path);
        const data = e.data;
        return {
          name: e.type === 'directory' ? `${rel}/` : rel,
          type: e.type,
          mode: e.mode,
          mtimeMs: e.mtimeMs,
          ...(data ? { size: data.length, content: () => readPieces(readerOf(data), data.length) } : {}),
        };
      });
    return packEntries(entries);
  },
  async downloadFile(path) {
    const abs = fs.resolve(path);
    const st = await fs.stat(abs);
    const data = fs.entries(abs)[0]?.data;
    if (st.type !== 'file' || data === undefined)
      throw new SandboxError('NOT_A_FILE', `Not a file: ${abs} (it is a ${st.type})`, {
        data: { path: abs },
      });
    return fileDownload(abs, data.length, readerOf(data));
  },
});

export const createMemoryProvider = (
  options: MemoryProviderOptions = {},
): SandboxProvider & { create(spec: Parameters<SandboxProvider['create']>[0]): Promise<MemorySandbox> } => {
  const flags: ProviderFlags = { durableJobs: false, isolated: false, terminals: false, stdio: false };
  const sandboxes = new Map<string, MemorySandbox>();

  const build = (agentId: string, limits: SandboxLimits): MemorySandbox => {
    const fs = createMemoryFs({
      ...(options.root ? { root: options.root } : {}),
      maxReadBytes: limits.maxReadBytes,
      ...(options.now ? { now: options.now } : {}),
    });
    const exec = createMemoryExec({
      ...(options.run ? { run: options.run } : {}),
      fs,
      maxOutputBytes: limits.maxOutputBytes,
    });
    const jobs = createMemoryJobs({
      exec,
      root: fs.root,
      resolve: fs.resolve,
      maxOutputBytes: limits.maxOutputBytes,
    });
    return {
      id: `mem_${nanoid(12)}`,
      agentId,
      fs,
      jobs,
      archive: createArchive(fs),
      limits,
      exec,
      detach: async () => {},
    };
  };

  return {
    name: 'memory',
    flags,
    async create(spec) {
      const existing = sandboxes.get(spec.agentId);
      if (existing) return existing;
      const sb = build(spec.agentId, { ...MEMORY_DEFAULT_LIMITS, ...options.limits, ...spec.limits });
      sandboxes.set(spec.agentId, sb);
      return sb;
    },
    async get(agentId) {
      return sandboxes.get(agentId);
    },
    async destroy(agentId) {
      const sb = sandboxes.get(agentId);
      sandboxes.delete(agentId);
      if (sb) for (const j of await sb.jobs.list()) if (j.status === 'running') await sb.jobs.kill(j.id);
    },
    async close() {},
    // A stop ends the sandbox's jobs and keeps its files, as the docker provider's does; a freeze
    // has nothing to freeze in one process, so it changes nothing.
    async pause(agentId, mode) {
      const sb = sandboxes.get(agentId);
      if (sb === undefined) return 'none';
      if (mode === 'stop')
        for (const j of await sb.jobs.list()) if (j.status === 'running') await sb.jobs.kill(j.id);
      return mode;
    },
    async resume() {},
    async usage(agentId) {
      const sb = sandboxes.get(agentId);
      if (sb === undefined) return undefined;
      // A workspace has a size only when the spec gave it one (as docker's loop workspaces do).
      const limitBytes = sb.limits.diskBytes;
      if (limitBytes === undefined) return {};
      const usedBytes = sb.fs.entries(sb.fs.root).reduce((n, e) => n + (e.data?.length ?? 0), 0);
      return { disk: { usedBytes, limitBytes } };
    },
  };
};
