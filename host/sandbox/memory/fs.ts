// In-memory SandboxFs: a Map from normalised absolute path to node, for unit tests only.
// This module wires the parts, each in its own module: fs-state.ts holds the map and its lookups
// (and the map's invariants); fs-write.ts its changes (writeFile, mkdir, remove, rename);
// fs-search.ts glob and grep. The reads are here.

import { posix } from 'node:path';
import { SandboxError } from '../../errors.ts';
import { createResolver } from '../paths.ts';
import type { DirEntry, FileRead, ReadOptions, ReadWithStatOptions, SandboxFs } from '../types.ts';
import { glob, grep } from './fs-search.ts';
import {
  bytesOf,
  children,
  descendants,
  get,
  type MemoryFsState,
  type Node,
  notDir,
  notFile,
  statOf,
} from './fs-state.ts';
import { mkdir, remove, rename, writeFile } from './fs-write.ts';

export interface MemoryFsOptions {
  /** Workspace root. Default '/workspace'. */
  root?: string;
  /** Largest read without an explicit `length`. Default 10 MiB. */
  maxReadBytes?: number;
  /** Clock, for deterministic mtimes. Default Date.now. */
  now?: () => number;
}

export interface MemoryFs extends SandboxFs {
  /** Every node, for archive download and test assertions (absolute path, sorted). */
  entries(
    under: string,
  ): Array<{ path: string; type: 'file' | 'directory'; mode: number; mtimeMs: number; data?: Buffer }>;
}

export const createMemoryFs = (options: MemoryFsOptions = {}): MemoryFs => {
  const resolve = createResolver(options.root ?? '/workspace');
  const root = resolve('.');
  const now = options.now ?? Date.now;
  const s: MemoryFsState = {
    resolve,
    root,
    maxReadBytes: options.maxReadBytes ?? 10 * 1024 * 1024,
    now,
    nodes: new Map<string, Node>([[root, { type: 'directory', mode: 0o755, mtimeMs: now() }]]),
  };

  const fs: MemoryFs = {
    root,
    resolve,
    async readFile(path, opts: ReadOptions = {}) {
      const abs = s.resolve(path);
      const n = get(s, abs);
      if (n.type !== 'file') throw notFile(abs);
      const data = bytesOf(n, opts, s.maxReadBytes);
      if (data === undefined) {
        throw new SandboxError(
          'FILE_TOO_LARGE',
          `${abs} is ${n.data.length} bytes, more than the ${s.maxReadBytes}-byte read limit; read it in parts with offset and length.`,
          {
            data: { path: abs, size: n.data.length, maxReadBytes: s.maxReadBytes },
          },
        );
      }
      return data;
    },
    async readWithStat(path, opts: ReadWithStatOptions = {}): Promise<FileRead> {
      const abs = s.resolve(path);
      const n = get(s, abs);
      const stat = statOf(abs, n);
      if (n.type !== 'file') return { stat };
      const data = bytesOf(n, opts, Math.min(opts.maxBytes ?? s.maxReadBytes, s.maxReadBytes));
      return data === undefined ? { stat } : { stat, data };
    },
    async stat(path) {
      const abs = s.resolve(path);
      return statOf(abs, get(s, abs));
    },
    async exists(path) {
      return s.nodes.has(s.resolve(path));
    },
    async list(path) {
      const abs = s.resolve(path);
      const n = get(s, abs);
      if (n.type !== 'directory') throw notDir(abs);
      return children(s, abs)
        .sort()
        .map((k): DirEntry => {
          const c = s.nodes.get(k) as Node;
          return { name: posix.basename(k), type: c.type, size: c.type === 'file' ? c.data.length : 0 };
        });
    },
    entries(under) {
      const abs = s.resolve(under);
      return [abs, ...descendants(s, abs)]
        .filter((k) => s.nodes.has(k))
        .sort()
        .map((k) => {
          const n = s.nodes.get(k) as Node;
          return n.type === 'file'
            ? { path: k, type: n.type, mode: n.mode, mtimeMs: n.mtimeMs, data: n.data }
            : { path: k, type: n.type, mode: n.mode, mtimeMs: n.mtimeMs };
        });
    },
    writeFile: (path, data, opts) => writeFile(s, path, data, opts),
    mkdir: (path, opts) => mkdir(s, path, opts),
    remove: (path, opts) => remove(s, path, opts),
    rename: (from, to) => rename(s, from, to),
    glob: (pattern, opts) => glob(s, pattern, opts),
    grep: (pattern, opts) => grep(s, pattern, opts),
  };
  return fs;
};
