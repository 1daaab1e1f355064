// What the parts of one in-memory SandboxFs share (fs.ts wires them): the map from normalised
// absolute path to node, the resolver, the limits and the clock, and the lookups every part makes.
// Invariants: the root directory always exists; every node's parent exists and is a directory;
// paths are confined with paths.ts (s.resolve) before any lookup. No symlinks exist here.

import { posix } from 'node:path';
import { SandboxError } from '../../errors.ts';
import type { FileStat, ReadOptions } from '../types.ts';

export type Node =
  | { type: 'file'; data: Buffer; mode: number; mtimeMs: number }
  | { type: 'directory'; mode: number; mtimeMs: number };

export interface MemoryFsState {
  /** Confines a path to the root (createResolver). */
  resolve: (path: string) => string;
  root: string;
  maxReadBytes: number;
  now: () => number;
  nodes: Map<string, Node>;
}

export const notFound = (path: string): SandboxError =>
  new SandboxError('FILE_NOT_FOUND', `No such file or directory: ${path}`, { data: { path } });
export const notDir = (path: string): SandboxError =>
  new SandboxError('NOT_A_DIRECTORY', `Not a directory: ${path}`, { data: { path } });
export const notFile = (path: string): SandboxError =>
  new SandboxError('NOT_A_FILE', `Not a file: ${path} (it is a directory)`, { data: { path } });

export const get = (s: MemoryFsState, abs: string): Node => {
  const n = s.nodes.get(abs);
  if (n) return n;
  // A missing path under a file is "not a directory", as POSIX says.
  for (let p = posix.dirname(abs); p !== s.root && p.length >= s.root.length; p = posix.dirname(p)) {
    if (s.nodes.get(p)?.type === 'file') throw notDir(p);
  }
  throw notFound(abs);
};
export const children = (s: MemoryFsState, dir: string): string[] => {
  const prefix = dir === '/' ? '/' : `${dir}/`;
  return [...s.nodes.keys()].filter(
    (k) => k !== dir && k.startsWith(prefix) && !k.slice(prefix.length).includes('/'),
  );
};
export const descendants = (s: MemoryFsState, dir: string): string[] => {
  const prefix = dir === '/' ? '/' : `${dir}/`;
  return [...s.nodes.keys()].filter((k) => k.startsWith(prefix));
};
export const mkdirp = (s: MemoryFsState, abs: string): void => {
  if (abs === s.root) return;
  const n = s.nodes.get(abs);
  if (n?.type === 'directory') return;
  if (n) throw notDir(abs);
  mkdirp(s, posix.dirname(abs));
  s.nodes.set(abs, { type: 'directory', mode: 0o755, mtimeMs: s.now() });
};
export const statOf = (abs: string, n: Node): FileStat => ({
  path: abs,
  type: n.type,
  size: n.type === 'file' ? n.data.length : 0,
  mtimeMs: n.mtimeMs,
  mode: n.mode,
});
/** Bytes of a file from `offset`: `length` of them, else all up to `most`, else undefined (too many). */
export const bytesOf = (n: Node & { type: 'file' }, opts: ReadOptions, most: number): Buffer | undefined => {
  const offset = Math.max(0, opts.offset ?? 0);
  if (opts.length === undefined && n.data.length - offset > most) return undefined;
  const length = Math.min(opts.length ?? most, most);
  return Buffer.from(n.data.subarray(offset, offset + Math.max(0, length)));
};
export const filesUnder = (s: MemoryFsState, dir: string): string[] =>
  descendants(s, dir)
    .filter((k) => s.nodes.get(k)?.type === 'file')
    .sort();
