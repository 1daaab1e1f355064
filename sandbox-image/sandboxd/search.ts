// glob and grep for sandboxd. glob walks the tree itself with the shared matcher (sandbox-wire/glob.ts)
// so that every provider agrees on what `*` and `**` mean. grep uses ripgrep (`rg --json`, sorted by
// path) when the image has it, else a small walker with JavaScript regular expressions (the local test
// path). Neither follows symlinks while walking. grep searches every file unless asked to skip hidden
// and ignored ones (skipIgnored: ripgrep's defaults, the walker with sandbox-wire/ignore.ts); only
// ignore files inside the searched tree count, never its parents' or the user's global ones.
// The walker holds one directory fd per level and opens each entry through its parent's fd
// (beneath.ts), so a directory swapped for a symlink mid-walk is never entered. ripgrep gets the
// search root as an inherited fd (`/proc/self/fd/3`) opened the same way, and a single file only
// once we have opened it and seen that it is a regular file (a FIFO would block it forever).
// Bounds: a walk visits at most MAX_VISITS entries and MAX_DEPTH levels; files larger than
// MAX_GREP_FILE_BYTES are skipped in a tree and refused when named; grep stops ripgrep once it has
// limit+1 matches; the call's signal (a cancel, or the operation's deadline) stops either.

import { spawn, spawnSync } from 'node:child_process';
import { type Dirent, promises as fsp } from 'node:fs';
import { createInterface } from 'node:readline';
import { fromBytes } from '../../sandbox-wire/byte-names.ts';
import { WireError } from '../../sandbox-wire/errors.ts';
import { globToRegExp, hasMagic, includeMatcher } from '../../sandbox-wire/glob.ts';
import { IGNORE_FILES, type IgnoreRule, isIgnored, parseIgnore } from '../../sandbox-wire/ignore.ts';
import { atFd, openSubdir } from './beneath.ts';
import { asAgent } from './identity.ts';
import { type Args, bool, optInt, optStr, str, toWireError } from './util.ts';
import { READ_FLAGS, type Workspace } from './workspace.ts';

const MAX_VISITS = 500_000;
const MAX_DEPTH = 256;
const MAX_LINE_CHARS = 2000;
export const MAX_GREP_FILE_BYTES = 32 * 1024 * 1024;
/** ripgrep's view of the search root we hand it as fd 3. */
const RG_ROOT = '/proc/self/fd/3';

const aborted = (): WireError => new WireError('ABORTED', 'The search was stopped.');

/**
 * Visits the regular files under the open directory `top`, depth-first with each directory's
 * entries in name order, at most `maxDepth` levels deep; `onFile` gets the file's path relative to
 * `top` (byte-names form) and its directory's fd. Stops when `onFile` returns false.
 */
const walkFiles = async (
  top: number,
  maxDepth: number,
  signal: AbortSignal,
  onFile: (rel: string, dirFd: number, name: Buffer) => boolean | Promise<boolean>,
  skipIgnored = false,
): Promise<void> => {
  let visits = 0;
  const visit = async (
    dirFd: number,
    rel: string,
    depth: number,
    inherited: readonly IgnoreRule[],
  ): Promise<boolean> => {
    if (signal.aborted) throw aborted();
    const entries: Dirent<Buffer>[] = await fsp
      .readdir(atFd(dirFd, ''), { withFileTypes: true, encoding: 'buffer' })
      .catch(() => []);
    entries.sort((a, b) => Buffer.compare(a.name, b.name));
    const rules = skipIgnored ? [...inherited, ...(await ignoreRulesIn(dirFd, rel))] : inherited;
    for (const d of entries) {
      if (++visits > MAX_VISITS) return false;
      const r = rel ? `${rel}/${fromBytes(d.name)}` : fromBytes(d.name);
      if (skipIgnored && (d.name[0] === 0x2e || isIgnored(rules, r, d.isDirectory()))) continue;
      if (d.isDirectory()) {
        if (depth >= Math.min(maxDepth, MAX_DEPTH)) continue;
        const sub = await openSubdir(dirFd, d.name).catch(() => undefined); // swapped for a link: skip
        if (!sub) continue;
        try {
          if (!(await visit(sub.fd, r, depth + 1, rules))) return false;
        } finally {
          await sub.close();
        }
      } else if (d.isFile() && !(await onFile(r, dirFd, d.name))) return false;
    }
    return true;
  };
  await visit(top, '', 1, []);
};

const MAX_IGNORE_FILE_BYTES = 1024 * 1024;

/** The rules of the ignore files in open directory `dirFd` (relative path `rel`). */
const ignoreRulesIn = async (dirFd: number, rel: string): Promise<IgnoreRule[]> => {
  const rules: IgnoreRule[] = [];
  for (const name of IGNORE_FILES) {
    const data = await readSmallFile(dirFd, Buffer.from(name), MAX_IGNORE_FILE_BYTES);
    if (data) rules.push(...parseIgnore(data.toString('utf8'), rel));
  }
  return rules;
};

/** The regular file `name` in open directory `dirFd`, when it is one (opened without following or blocking) and at most `max` bytes. */
const readSmallFile = async (dirFd: number, name: Buffer, max: number): Promise<Buffer | undefined> => {
  const fh = await fsp.open(atFd(dirFd, name), READ_FLAGS).catch(() => undefined);
  if (!fh) return undefined;
  try {
    const st = await fh.stat();
    if (!st.isFile() || st.size > max) return undefined;
    return await fh.readFile();
  } catch {
    return undefined;
  } finally {
    await fh.close();
  }
};

let hasRg: boolean | undefined;
const ripgrep = (): boolean => {
  if (hasRg === undefined)
    hasRg =
      process.env.SANDBOXD_NO_RG !== '1' && spawnSync('rg', ['--version'], { stdio: 'ignore' }).status === 0;
  return hasRg;
};

type Match = { path: string; line: number; text: string };
const clip = (line: string): string => line.replace(/\r?\n$/, '').slice(0, MAX_LINE_CHARS);

/** What grep searches: an open directory (O_PATH) or an open regular file, and how ripgrep names it. */
type Target = { fh: fsp.FileHandle; kind: 'directory' | 'file' };

/** ripgrep over the target handed to it as fd 3; paths come back relative to the target ('' for the file itself). */
const grepWithRg = (
  pattern: string,
  target: Target,
  include: string | undefined,
  ignoreCase: boolean,
  skipIgnored: boolean,
  limit: number,
  signal: AbortSignal,
) =>
  new Promise<{ matches: Array<Match>; truncated: boolean }>((resolve, reject) => {
    if (signal.aborted) return reject(aborted());
    const args = [
      '--json',
      '--sort',
      'path',
      ...(skipIgnored
        ? ['--no-require-git', '--no-ignore-parent', '--no-ignore-global']
        : ['--hidden', '--no-ignore']),
      '--no-messages',
      '--one-file-system',
      '--max-filesize',
      String(MAX_GREP_FILE_BYTES),
      ignoreCase ? '-i' : '-s',
    ];
    if (include) args.push('--glob', include);
    args.push('-e', pattern, '--', RG_ROOT);
    // As the agent (all three ids), so that the agent's own processes may signal it but it holds
    // nothing of sandboxd's (identity.ts).
    const cmd = asAgent('rg', args);
    const rg = spawn(cmd.file, cmd.args, { stdio: ['ignore', 'pipe', 'pipe', target.fh.fd] });
    const matches: Match[] = [];
    let truncated = false;
    let stderr = '';
    const stop = (): void => {
      rg.kill('SIGKILL');
    };
    signal.addEventListener('abort', stop, { once: true });
    rg.stderr?.on('data', (b: Buffer) => {
      if (stderr.length < 4000) stderr += b.toString();
    });
    createInterface({ input: rg.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (truncated) return;
      let m: {
        type?: string;
        data?: {
          path?: { text?: string; bytes?: string };
          lines?: { text?: string; bytes?: string };
          line_number?: number;
        };
      };
      try {
        m = JSON.parse(line);
      } catch {
        return;
      }
      const d = m.data;
      if (m.type !== 'match' || !d?.path || typeof d.line_number !== 'number') return;
      const path =
        typeof d.path.text === 'string'
          ? d.path.text
          : typeof d.path.bytes === 'string'
            ? fromBytes(Buffer.from(d.path.bytes, 'base64'))
            : undefined;
      if (path === undefined) return;
      // Only what lies under the root we gave it: anything else is dropped.
      const rel =
        path === RG_ROOT ? '' : path.startsWith(`${RG_ROOT}/`) ? path.slice(RG_ROOT.length + 1) : undefined;
      if (rel === undefined) return;
      if (matches.length >= limit) {
        truncated = true;
        return stop();
      }
      const text = d.lines?.text ?? Buffer.from(d.lines?.bytes ?? '', 'base64').toString('utf8');
      matches.push({ path: rel, line: d.line_number, text: clip(text) });
    });
    rg.on('error', (e) => {
      signal.removeEventListener('abort', stop);
      reject(e);
    });
    rg.on('close', (code) => {
      signal.removeEventListener('abort', stop);
      if (signal.aborted && !truncated) return reject(aborted());
      if (code === 2 && matches.length === 0 && !truncated) {
        return reject(
          new WireError('INVALID_ARGUMENTS', `ripgrep failed: ${stderr.trim() || 'invalid pattern'}`),
        );
      }
      resolve({ matches, truncated });
    });
  });

/** The same search in JavaScript (no ripgrep: local runs), over the same fd-confined walk. */
const grepWithJs = async (
  pattern: string,
  target: Target,
  include: string | undefined,
  ignoreCase: boolean,
  skipIgnored: boolean,
  limit: number,
  signal: AbortSignal,
) => {
  let re: RegExp;
  try {
    re = new RegExp(pattern, ignoreCase ? 'i' : '');
  } catch (e) {
    throw new WireError(
      'INVALID_ARGUMENTS',
      `Invalid regular expression ${JSON.stringify(pattern)}: ${(e as Error).message}`,
    );
  }
  const matches: Match[] = [];
  let truncated = false;
  /** Searches one file's bytes; false once the limit is passed. */
  const search = (rel: string, data: Buffer | undefined): boolean => {
    if (!data || data.subarray(0, 8192).includes(0)) return true; // binary, as ripgrep skips it
    const lines = data.toString('utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const text = (lines[i] as string).replace(/\r$/, '');
      if (i === lines.length - 1 && text === '') break;
      if (!re.test(text)) continue;
      if (matches.length >= limit) {
        truncated = true;
        return false;
      }
      matches.push({ path: rel, line: i + 1, text: text.slice(0, MAX_LINE_CHARS) });
    }
    return true;
  };
  if (target.kind === 'file') search('', await target.fh.readFile());
  else {
    const keep = includeMatcher(include);
    await walkFiles(
      target.fh.fd,
      Infinity,
      signal,
      async (rel, dirFd, name) =>
        keep(rel) ? search(rel, await readSmallFile(dirFd, name, MAX_GREP_FILE_BYTES)) : true,
      skipIgnored,
    );
  }
  return { matches, truncated };
};

/** Opens what grep searches at lexical `abs`: a directory, or a regular file no larger than grep reads. */
const openTarget = async (ws: Workspace, abs: string): Promise<Target> => {
  const r = await ws.open(abs, { followLast: true });
  try {
    const st = await fsp.lstat(r.path);
    if (st.isDirectory()) return { fh: await openSubdir(r.dir.fd, r.name), kind: 'directory' };
    const fh = await fsp.open(r.path, READ_FLAGS).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENXIO') throw notAFile(abs);
      throw e;
    });
    try {
      const opened = await fh.stat();
      if (!opened.isFile()) throw notAFile(abs);
      if (opened.size > MAX_GREP_FILE_BYTES) {
        throw new WireError(
          'FILE_TOO_LARGE',
          `${abs} is ${opened.size} bytes; grep searches files of up to ${MAX_GREP_FILE_BYTES} bytes. Use bash (rg, grep) on parts of it.`,
          { data: { path: abs, size: opened.size } },
        );
      }
      return { fh, kind: 'file' };
    } catch (e) {
      await fh.close();
      throw e;
    }
  } finally {
    await r.close().catch(() => {});
  }
};

const notAFile = (abs: string): WireError =>
  new WireError('NOT_A_FILE', `Not a file: ${abs} (grep searches regular files and directories)`, {
    data: { path: abs },
  });

export const createSearchOps = (ws: Workspace) => ({
  async glob(args: Args, signal: AbortSignal = new AbortController().signal) {
    let cwd = ws.resolve(optStr(args, 'cwd') ?? '.');
    let pattern = str(args, 'pattern');
    const limit = optInt(args, 'limit', 1000, 100_000);
    if (pattern.startsWith('/')) {
      // An absolute pattern: its literal directory prefix becomes the (confined) cwd.
      const parts = pattern.split('/');
      const idx = parts.findIndex((p) => hasMagic(p));
      const literal = idx === -1 ? parts.slice(0, -1) : parts.slice(0, idx);
      cwd = ws.resolve(literal.join('/') || '/');
      pattern = parts.slice(literal.length).join('/');
    }
    pattern = pattern.replace(/^\.\//, '');
    const re = globToRegExp(pattern);
    const maxDepth = pattern.includes('**') ? Infinity : pattern.split('/').length;
    try {
      const r = await ws.open(cwd, { followLast: true });
      const dir = await openSubdir(r.dir.fd, r.name)
        .catch(() => undefined)
        .finally(() => r.close().catch(() => {}));
      if (!dir) return { paths: [], truncated: false };
      const found: string[] = [];
      try {
        await walkFiles(dir.fd, maxDepth, signal, (rel) => {
          if (re.test(rel)) found.push(rel);
          return true;
        });
      } finally {
        await dir.close();
      }
      const all = found.sort().map((rel) => (cwd === '/' ? `/${rel}` : `${cwd}/${rel}`));
      return { paths: all.slice(0, limit), truncated: all.length > limit };
    } catch (e) {
      throw toWireError(e, cwd);
    }
  },

  async grep(args: Args, signal: AbortSignal) {
    const pattern = str(args, 'pattern');
    const base = ws.resolve(optStr(args, 'path') ?? '.');
    const include = optStr(args, 'include') || undefined;
    const limit = optInt(args, 'limit', 1000, 100_000);
    try {
      const target = await openTarget(ws, base);
      try {
        const how = [include, bool(args, 'ignoreCase'), bool(args, 'skipIgnored'), limit, signal] as const;
        const found = ripgrep()
          ? await grepWithRg(pattern, target, ...how)
          : await grepWithJs(pattern, target, ...how);
        // Report lexical paths: the searches saw the target's fd.
        const matches = found.matches.map((m) => ({ ...m, path: m.path ? `${base}/${m.path}` : base }));
        return { matches, truncated: found.truncated };
      } finally {
        await target.fh.close();
      }
    } catch (e) {
      throw toWireError(e, base);
    }
  },
});
