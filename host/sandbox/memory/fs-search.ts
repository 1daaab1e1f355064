// The in-memory SandboxFs's searches: glob over file paths, grep over file lines (binary files
// skipped, as ripgrep does; lines cut at MAX_LINE_CHARS), with skipIgnored honouring hidden names and
// ignore files as sandboxd does (sandbox-wire/ignore.ts).

import { posix } from 'node:path';
import { globToRegExp, hasMagic, includeMatcher } from '../../../sandbox-wire/glob.ts';
import { IGNORE_FILES, isHidden, isIgnored, parseIgnore } from '../../../sandbox-wire/ignore.ts';
import { SandboxError } from '../../errors.ts';
import { relativeTo } from '../paths.ts';
import type { GlobOptions, GrepMatch, GrepOptions } from '../types.ts';
import { filesUnder, get, type MemoryFsState } from './fs-state.ts';

const MAX_LINE_CHARS = 2000;

/** grep's skipIgnored under directory `base`: not hidden, and no ignore file excludes it or a parent. */
const notIgnored = (s: MemoryFsState, base: string): ((rel: string) => boolean) => {
  const files = filesUnder(s, base)
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
      (s.nodes.get(`${base}/${rel}`) as { data: Buffer }).data.toString('utf8'),
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

export async function glob(
  s: MemoryFsState,
  pattern: string,
  opts: GlobOptions = {},
): Promise<{ paths: string[]; truncated: boolean }> {
  let cwd = s.resolve(opts.cwd ?? '.');
  let pat = pattern;
  if (pat.startsWith('/')) {
    // Split the literal directory prefix off an absolute pattern, and confine it.
    const parts = pat.split('/');
    const idx = parts.findIndex((p) => hasMagic(p));
    const literal = idx === -1 ? parts.slice(0, -1) : parts.slice(0, idx);
    cwd = s.resolve(literal.join('/') || '/');
    pat = parts.slice(literal.length).join('/');
  }
  const re = globToRegExp(pat.replace(/^\.\//, ''));
  const limit = opts.limit ?? 1000;
  if (s.nodes.get(cwd)?.type !== 'directory') return { paths: [], truncated: false };
  const all = filesUnder(s, cwd).filter((k) => re.test(relativeTo(cwd, k)));
  return { paths: all.slice(0, limit), truncated: all.length > limit };
}

export async function grep(
  s: MemoryFsState,
  pattern: string,
  opts: GrepOptions = {},
): Promise<{ matches: GrepMatch[]; truncated: boolean }> {
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
  const base = s.resolve(opts.path ?? '.');
  const node = get(s, base);
  const limit = opts.limit ?? 1000;
  const include = includeMatcher(opts.include);
  const kept = opts.skipIgnored === true ? notIgnored(s, base) : () => true;
  const files =
    node.type === 'file'
      ? [base]
      : filesUnder(s, base).filter((k) => include(relativeTo(base, k)) && kept(relativeTo(base, k)));
  const matches: GrepMatch[] = [];
  for (const file of files) {
    const data = (s.nodes.get(file) as { data: Buffer }).data;
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
}
