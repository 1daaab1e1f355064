// In-memory SandboxFs: a Map from normalised absolute path to node, for unit tests only.
// Invariants: the root directory always exists; every node's parent exists and is a directory;
// paths are confined with paths.ts before any lookup. No symlinks exist here.

import { posix } from 'node:path';
import { globToRegExp, hasMagic, includeMatcher } from '../../../sandbox-wire/glob.ts';
import { IGNORE_FILES, isHidden, isIgnored, parseIgnore } from '../../../sandbox-wire/ignore.ts';
import { SandboxError } from '../../errors.ts';
import { createResolver, relativeTo } from '../paths.ts';
import type {
  DirEntry,
  FileRead,
  FileStat,
  GlobOptions,
  GrepMatch,
  GrepOptions,
  ReadOptions,
  ReadWithStatOptions,
  SandboxFs,
} from '../types.ts';

type Node =
  | { type: 'file'; data: Buffer; mode: number; mtimeMs: number }
  | { type: 'directory'; mode: number; mtimeMs: number };

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

const MAX_LINE_CHARS = 2000;

const notFound = (path: string): SandboxError =>
  new SandboxError('FILE_NOT_FOUND', `No such file or directory: ${path}`, { data: { path } });
const notDir = (path: string): SandboxError =>
  new SandboxError('NOT_A_DIRECTORY', `Not a directory: ${path}`, { data: { path } });
const notFile = (path: string): SandboxError =>
  new SandboxError('NOT_A_FILE', `Not a file: ${path} (it is a directory)`, { data: { path } });

export const createMemoryFs = (options: MemoryFsOptions = {}): MemoryFs => {
  const resolve = createResolver(options.root ?? '/workspace');
  const root = resolve('.');
  const maxReadBytes = options.maxReadBytes ?? 10 * 1024 * 1024;
  const now = options.now ?? Date.now;
  const nodes = new Map<string, Node>([[root, { type: 'directory', mode: 0o755, mtimeMs: now() }]]);

  const get = (abs: string): Node => {
    const n = nodes.get(abs);
    if (n) return n;
    // A missing path under a file is "not a directory", as POSIX says.
    for (let p = posix.dirname(abs); p !== root && p.length >= root.length; p = posix.dirname(p)) {
      if (nodes.get(p)?.type === 'file') throw notDir(p);
    }
    throw notFound(abs);
  };
  const children = (dir: string): string[] => {
    const prefix = dir === '/' ? '/' : `${dir}/`;
    return [...nodes.keys()].filter(
      (k) => k !== dir && k.startsWith(prefix) && !k.slice(prefix.length).includes('/'),
    );
  };
  const descendants = (dir: string): string[] => {
    const prefix = dir === '/' ? '/' : `${dir}/`;
    return [...nodes.keys()].filter((k) => k.startsWith(prefix));
  };
  const mkdirp = (abs: string): void => {
    if (abs === root) return;
    const n = nodes.get(abs);
    if (n?.type === 'directory') return;
    if (n) throw notDir(abs);
    mkdirp(posix.dirname(abs));
    nodes.set(abs, { type: 'directory', mode: 0o755, mtimeMs: now() });
  };
  const statOf = (abs: string, n: Node): FileStat => ({
    path: abs,
    type: n.type,
    size: n.type === 'file' ? n.data.length : 0,
    mtimeMs: n.mtimeMs,
    mode: n.mode,
  });
  /** Bytes of a file from `offset`: `length` of them, else all up to `most`, else undefined (too many). */
  const bytesOf = (n: Node & { type: 'file' }, opts: ReadOptions, most: number): Buffer | undefined => {
    const offset = Math.max(0, opts.offset ?? 0);
    if (opts.length === undefined && n.data.length - offset > most) return undefined;
    const length = Math.min(opts.length ?? most, most);
    return Buffer.from(n.data.subarray(offset, offset + Math.max(0, length)));
  };
  const filesUnder = (dir: string): string[] =>
    descendants(dir)
      .filter((k) => nodes.get(k)?.type === 'file')
      .sort();

  /** grep's skipIgnored under directory `base`: not hidden, and no ignore file excludes it or a parent. */
  const notIgnored = (base: string): ((rel: string) => boolean) => {
    const files = filesUnder(base)
      .map((k) => relativeTo(base, k))
      .filter((rel) => (IGNORE_FILES as readonly string[]).includes(posix.basename(rel)));
    // Parents' files before their children's, .gitignore before .ignore in one directory.
    const depth = (rel: string) => rel.split('/').length;
    files.sort(
      (a, b) =>
        depth(a) - depth(b) ||
        IGNORE_FILES.indexOf(posix.basename(a) as never) - IGNORE_FILES.indexOf(posix.basename(b) as never),
    );
    const rules = files.flatMap((rel) => {
      const dir = posix.dirname(rel);
      return parseIgnore(
        (nodes.get(`${base}/${rel}`) as { data: Buffer }).data.toString('utf8'),
        dir === '.' ? '' : dir,
      );
    });
    return (rel) => {
      if (isHidden(rel)) return false;
      const parts = rel.split('/');
      for (let i = 1; i < parts.length; i++)
        if (isIgnored(rules, parts.slice(0, i).join('/'), true)) return false;
      return !isIgnored(rules, rel, false);
    };
  };

  const fs: MemoryFs = {
    root,
    resolve,
    async readFile(path, opts: ReadOptions = {}) {
      const abs = resolve(path);
      const n = get(abs);
      if (n.type !== 'file') throw notFile(abs);
      const data = bytesOf(n, opts, maxReadBytes);
      if (data === undefined) {
        throw new SandboxError(
          'FILE_TOO_LARGE',
          `${abs} is ${n.data.length} bytes, more than the ${maxReadBytes}-byte read limit; read it in parts with offset and length.`,
          {
            data: { path: abs, size: n.data.length, maxReadBytes },
          },
        );
      }
      return data;
    },
    async readWithStat(path, opts: ReadWithStatOptions = {}): Promise<FileRead> {
      const abs = resolve(path);
      const n = get(abs);
      const stat = statOf(abs, n);
      if (n.type !== 'file') return { stat };
      const data = bytesOf(n, opts, Math.min(opts.maxBytes ?? maxReadBytes, maxReadBytes));
      return data === undefined ? { stat } : { stat, data };
    },
    async writeFile(path, data, opts = {}) {
      const abs = resolve(path);
      if (abs === root) throw notFile(abs);
      const existing = nodes.get(abs);
      if (existing?.type === 'directory') throw notFile(abs);
      mkdirp(posix.dirname(abs));
      const buf = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data);
      nodes.set(abs, {
        type: 'file',
        data: buf,
        mode: (opts.mode ?? existing?.mode ?? 0o644) & 0o7777,
        mtimeMs: now(),
      });
    },
    async stat(path) {
      const abs = resolve(path);
      return statOf(abs, get(abs));
    },
    async exists(path) {
      return nodes.has(resolve(path));
    },
    async list(path) {
      const abs = resolve(path);
      const n = get(abs);
      if (n.type !== 'directory') throw notDir(abs);
      return children(abs)
        .sort()
        .map((k): DirEntry => {
          const c = nodes.get(k) as Node;
          return { name: posix.basename(k), type: c.type, size: c.type === 'file' ? c.data.length : 0 };
        });
    },
    async mkdir(path, opts = {}) {
      const abs = resolve(path);
      if (opts.recursive) return mkdirp(abs);
      const n = nodes.get(abs);
      if (n?.type === 'directory') return;
      if (n) throw notDir(abs);
      const parent = get(posix.dirname(abs));
      if (parent.type !== 'directory') throw notDir(posix.dirname(abs));
      nodes.set(abs, { type: 'directory', mode: 0o755, mtimeMs: now() });
    },
    async remove(path, opts = {}) {
      const abs = resolve(path);
      if (abs === root)
        throw new SandboxError(
          'CONFLICT',
          'The workspace root cannot be removed; remove the entries inside it instead.',
        );
      const n = get(abs);
      if (n.type === 'directory') {
        const inside = descendants(abs);
        if (inside.length > 0 && !opts.recursive) {
          throw new SandboxError(
            'DIRECTORY_NOT_EMPTY',
            `Directory not empty: ${abs}; pass recursive to remove it with its contents.`,
            { data: { path: abs } },
          );
        }
        for (const k of inside) nodes.delete(k);
      }
      nodes.delete(abs);
    },
    async rename(from, to) {
      const src = resolve(from);
      const dst = resolve(to);
      if (src === root || dst === root)
        throw new SandboxError('CONFLICT', 'The workspace root cannot be renamed or replaced.');
      const n = get(src);
      if (src === dst) return;
      if (n.type === 'directory' && dst.startsWith(`${src}/`)) {
        throw new SandboxError('CONFLICT', `Cannot move directory ${src} into itself (${dst}).`);
      }
      const target = nodes.get(dst);
      if (target?.type === 'directory' && (n.type === 'file' || descendants(dst).length > 0)) {
        throw new SandboxError(
          n.type === 'file' ? 'NOT_A_FILE' : 'DIRECTORY_NOT_EMPTY',
          `Cannot replace directory ${dst}.`,
          { data: { path: dst } },
        );
      }
      if (target?.type === 'file' && n.type === 'directory') throw notDir(dst);
      const parent = get(posix.dirname(dst));
      if (parent.type !== 'directory') throw notDir(posix.dirname(dst));
      const moved = [src, ...descendants(src)].map((k) => [k, nodes.get(k) as Node] as const);
      for (const [k] of moved) nodes.delete(k);
      for (const [k, v] of moved) nodes.set(dst + k.slice(src.length), v);
    },
    async glob(pattern, opts: GlobOptions = {}) {
      let cwd = resolve(opts.cwd ?? '.');
      let pat = pattern;
      if (pat.startsWith('/')) {
        // Split the literal directory prefix off an absolute pattern, and confine it.
        const parts = pat.split('/');
        const idx = parts.findIndex((p) => hasMagic(p));
        const literal = idx === -1 ? parts.slice(0, -1) : parts.slice(0, idx);
        cwd = resolve(literal.join('/') || '/');
        pat = parts.slice(literal.length).join('/');
      }
      const re = globToRegExp(pat.replace(/^\.\//, ''));
      const limit = opts.limit ?? 1000;
      if (nodes.get(cwd)?.type !== 'directory') return { paths: [], truncated: false };
      const all = filesUnder(cwd).filter((k) => re.test(relativeTo(cwd, k)));
      return { paths: all.slice(0, limit), truncated: all.length > limit };
    },
    async grep(pattern, opts: GrepOptions = {}) {
      let re: RegExp;
      try {
        re = new RegExp(pattern, opts.ignoreCase ? 'i' : '');
      } catch (e) {
        throw new SandboxError(
          'INVALID_ARGUMENTS',
          `Invalid regular expression ${JSON.stringify(pattern)}: ${(e as Error).message}`,
          { cause: e },
        );
      }
      const base = resolve(opts.path ?? '.');
      const node = get(base);
      const limit = opts.limit ?? 1000;
      const include = includeMatcher(opts.include);
      const kept = opts.skipIgnored === true ? notIgnored(base) : () => true;
      const files =
        node.type === 'file'
          ? [base]
          : filesUnder(base).filter((k) => include(relativeTo(base, k)) && kept(relativeTo(base, k)));
      const matches: GrepMatch[] = [];
      for (const file of files) {
        const data = (nodes.get(file) as { data: Buffer }).data;
        if (data.subarray(0, 8192).includes(0)) continue; // binary, as ripgrep skips it
        const lines = data.toString('utf8').split('\n');
        for (let i = 0; i < lines.length; i++) {
          const text = (lines[i] as string).replace(/\r$/, '');
          if (i === lines.length - 1 && text === '') break;
          if (!re.test(text)) continue;
          if (matches.length >= limit) return { matches, truncated: true };
          matches.push({ path: file, line: i + 1, text: text.slice(0, MAX_LINE_CHARS) });
        }
      }
      return { matches, truncated: false };
    },
    entries(under) {
      const abs = resolve(under);
      return [abs, ...descendants(abs)]
        .filter((k) => nodes.has(k))
        .sort()
        .map((k) => {
          const n = nodes.get(k) as Node;
          return n.type === 'file'
            ? { path: k, type: n.type, mode: n.mode, mtimeMs: n.mtimeMs, data: n.data }
            : { path: k, type: n.type, mode: n.mode, mtimeMs: n.mtimeMs };
        });
    },
  };
  return fs;
};
