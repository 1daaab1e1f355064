// The in-memory SandboxFs's changes: writeFile, mkdir, remove and rename, each keeping the map's
// invariants (fs-state.ts): a parent is made (mkdirp) or checked before a node is set, the root is
// never removed, renamed or replaced, and a directory moves with everything under it.

import { posix } from 'node:path';
import { SandboxError } from '../../errors.ts';
import type { NoSymlinks } from '../types.ts';
import { descendants, get, type MemoryFsState, mkdirp, type Node, notDir, notFile } from './fs-state.ts';

export async function writeFile(
  s: MemoryFsState,
  path: string,
  data: Uint8Array | string,
  opts: { mode?: number } & NoSymlinks = {},
): Promise<void> {
  const abs = s.resolve(path);
  if (abs === s.root) throw notFile(abs);
  const existing = s.nodes.get(abs);
  if (existing?.type === 'directory') throw notFile(abs);
  mkdirp(s, posix.dirname(abs));
  const buf = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data);
  s.nodes.set(abs, {
    type: 'file',
    data: buf,
    mode: (opts.mode ?? existing?.mode ?? 0o644) & 0o7777,
    mtimeMs: s.now(),
  });
}

export async function mkdir(
  s: MemoryFsState,
  path: string,
  opts: { recursive?: boolean } & NoSymlinks = {},
): Promise<void> {
  const abs = s.resolve(path);
  if (opts.recursive) return mkdirp(s, abs);
  const n = s.nodes.get(abs);
  if (n?.type === 'directory') return;
  if (n) throw notDir(abs);
  const parent = get(s, posix.dirname(abs));
  if (parent.type !== 'directory') throw notDir(posix.dirname(abs));
  s.nodes.set(abs, { type: 'directory', mode: 0o755, mtimeMs: s.now() });
}

export async function remove(
  s: MemoryFsState,
  path: string,
  opts: { recursive?: boolean } & NoSymlinks = {},
): Promise<void> {
  const abs = s.resolve(path);
  if (abs === s.root)
    throw new SandboxError(
      'CONFLICT',
      'The workspace s.root cannot be removed; remove the entries inside it instead.',
    );
  const n = get(s, abs);
  if (n.type === 'directory') {
    const inside = descendants(s, abs);
    if (inside.length > 0 && !opts.recursive) {
      throw new SandboxError(
        'DIRECTORY_NOT_EMPTY',
        `Directory not empty: ${abs}; pass recursive to remove it with its contents.`,
        { data: { path: abs } },
      );
    }
    for (const k of inside) s.nodes.delete(k);
  }
  s.nodes.delete(abs);
}

export async function rename(s: MemoryFsState, from: string, to: string): Promise<void> {
  const src = s.resolve(from);
  const dst = s.resolve(to);
  if (src === s.root || dst === s.root)
    throw new SandboxError('CONFLICT', 'The workspace s.root cannot be renamed or replaced.');
  const n = get(s, src);
  if (src === dst) return;
  if (n.type === 'directory' && dst.startsWith(`${src}/`)) {
    throw new SandboxError('CONFLICT', `Cannot move directory ${src} into itself (${dst}).`);
  }
  const target = s.nodes.get(dst);
  if (target?.type === 'directory' && (n.type === 'file' || descendants(s, dst).length > 0)) {
    throw new SandboxError(
      n.type === 'file' ? 'NOT_A_FILE' : 'DIRECTORY_NOT_EMPTY',
      `Cannot replace directory ${dst}.`,
      { data: { path: dst } },
    );
  }
  if (target?.type === 'file' && n.type === 'directory') throw notDir(dst);
  const parent = get(s, posix.dirname(dst));
  if (parent.type !== 'directory') throw notDir(posix.dirname(dst));
  const moved = [src, ...descendants(s, src)].map((k) => [k, s.nodes.get(k) as Node] as const);
  for (const [k] of moved) s.nodes.delete(k);
  for (const [k, v] of moved) s.nodes.set(dst + k.slice(src.length), v);
}
