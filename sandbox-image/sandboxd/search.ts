// glob and grep for sandboxd. glob walks the tree itself with the shared matcher (host/sandbox/glob.ts)
// so that every provider agrees on what `*` and `**` mean. grep uses ripgrep (`rg --json`, hidden files
// included, ignore files not honoured, sorted by path) when the image has it, else a small walker with
// JavaScript regular expressions (the local test path). Neither follows symlinks while walking.
// Bounds: a walk visits at most MAX_VISITS entries; grep stops ripgrep once it has limit+1 matches.

import { spawn, spawnSync } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import { posix } from 'node:path';
import { createInterface } from 'node:readline';
import { SandboxError } from '../../host/errors.ts';
import { globToRegExp, hasMagic, includeMatcher } from '../../host/sandbox/glob.ts';
import { type Args, bool, optInt, optStr, str, toSandboxError } from './util.ts';
import type { Workspace } from './workspace.ts';

const MAX_VISITS = 500_000;
const MAX_LINE_CHARS = 2000;
const MAX_GREP_FILE_BYTES = 32 * 1024 * 1024;

/** Regular files under `dir` (real path), as paths relative to it, at most `maxDepth` levels deep. */
const walk = async (dir: string, maxDepth: number, keep: (rel: string) => boolean): Promise<string[]> => {
  const found: string[] = [];
  const stack: Array<[string, number]> = [['', 1]];
  let visits = 0;
  while (stack.length > 0) {
    const [rel, depth] = stack.pop() as [string, number];
    const entries = await fsp
      .readdir(rel ? posix.join(dir, rel) : dir, { withFileTypes: true })
      .catch(() => []);
    for (const d of entries) {
      if (++visits > MAX_VISITS) return found;
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory() && depth < maxDepth) stack.push([r, depth + 1]);
      else if (d.isFile() && keep(r)) found.push(r);
    }
  }
  return found;
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

const grepWithRg = (
  pattern: string,
  real: string,
  include: string | undefined,
  ignoreCase: boolean,
  limit: number,
  signal: AbortSignal,
) =>
  new Promise<{ matches: Array<Match>; truncated: boolean }>((resolve, reject) => {
    const args = [
      '--json',
      '--sort',
      'path',
      '--hidden',
      '--no-ignore',
      '--no-messages',
      ignoreCase ? '-i' : '-s',
    ];
    if (include) args.push('--glob', include);
    args.push('-e', pattern, '--', real);
    const rg = spawn('rg', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const matches: Match[] = [];
    let truncated = false;
    let stderr = '';
    const stop = (): void => {
      rg.kill('SIGKILL');
    };
    signal.addEventListener('abort', stop, { once: true });
    rg.stderr.on('data', (b: Buffer) => {
      if (stderr.length < 4000) stderr += b.toString();
    });
    createInterface({ input: rg.stdout }).on('line', (line) => {
      if (truncated) return;
      let m: {
        type?: string;
        data?: { path?: { text?: string }; lines?: { text?: string; bytes?: string }; line_number?: number };
      };
      try {
        m = JSON.parse(line);
      } catch {
        return;
      }
      const d = m.data;
      if (m.type !== 'match' || typeof d?.path?.text !== 'string' || typeof d.line_number !== 'number')
        return;
      if (matches.length >= limit) {
        truncated = true;
        return stop();
      }
      const text = d.lines?.text ?? Buffer.from(d.lines?.bytes ?? '', 'base64').toString('utf8');
      matches.push({ path: d.path.text, line: d.line_number, text: clip(text) });
    });
    rg.on('error', reject);
    rg.on('close', (code) => {
      signal.removeEventListener('abort', stop);
      if (code === 2 && matches.length === 0 && !truncated) {
        return reject(
          new SandboxError('INVALID_ARGUMENTS', `ripgrep failed: ${stderr.trim() || 'invalid pattern'}`),
        );
      }
      resolve({ matches, truncated });
    });
  });

const grepWithJs = async (
  pattern: string,
  real: string,
  include: string | undefined,
  ignoreCase: boolean,
  limit: number,
) => {
  let re: RegExp;
  try {
    re = new RegExp(pattern, ignoreCase ? 'i' : '');
  } catch (e) {
    throw new SandboxError(
      'INVALID_ARGUMENTS',
      `Invalid regular expression ${JSON.stringify(pattern)}: ${(e as Error).message}`,
    );
  }
  const st = await fsp.stat(real);
  const keep = includeMatcher(include);
  const files = st.isFile() ? [''] : (await walk(real, Infinity, keep)).sort();
  const matches: Match[] = [];
  for (const rel of files) {
    const file = rel ? posix.join(real, rel) : real;
    const size = await fsp.stat(file).then(
      (s) => s.size,
      () => -1,
    );
    if (size < 0 || size > MAX_GREP_FILE_BYTES) continue;
    const data = await fsp.readFile(file).catch(() => undefined);
    if (!data || data.subarray(0, 8192).includes(0)) continue; // binary, as ripgrep skips it
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
};

export const createSearchOps = (ws: Workspace) => ({
  async glob(args: Args) {
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
      const real = await ws.real(cwd, true);
      const st = await fsp.stat(real).catch(() => undefined);
      if (!st?.isDirectory()) return { paths: [], truncated: false };
      const all = (await walk(real, maxDepth, (rel) => re.test(rel)))
        .sort()
        .map((rel) => (cwd === '/' ? `/${rel}` : `${cwd}/${rel}`));
      return { paths: all.slice(0, limit), truncated: all.length > limit };
    } catch (e) {
      throw toSandboxError(e, cwd);
    }
  },

  async grep(args: Args, signal: AbortSignal) {
    const pattern = str(args, 'pattern');
    const base = ws.resolve(optStr(args, 'path') ?? '.');
    const include = optStr(args, 'include') || undefined;
    const limit = optInt(args, 'limit', 1000, 100_000);
    try {
      const real = await ws.real(base, true);
      await fsp.stat(real);
      const found = ripgrep()
        ? await grepWithRg(pattern, real, include, bool(args, 'ignoreCase'), limit, signal)
        : await grepWithJs(pattern, real, include, bool(args, 'ignoreCase'), limit);
      // Report lexical paths: ripgrep and the walker saw the real one.
      const matches = found.matches
        .filter((m) => m.path === real || m.path.startsWith(`${real}/`))
        .map((m) => ({ ...m, path: base + m.path.slice(real.length) }));
      return { matches, truncated: found.truncated };
    } catch (e) {
      throw toSandboxError(e, base);
    }
  },
});
