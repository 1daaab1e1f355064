// Which files a search skips when asked to (grep's skipIgnored): hidden names (a path component
// starting with `.`) and what `.gitignore` / `.ignore` files inside the searched tree exclude, as
// ripgrep decides by default. Shared by sandboxd's walker (when the image has no ripgrep) and the
// memory provider, so that every provider skips alike. Supported .gitignore syntax: comments, `!`
// negation (the last matching rule wins), a trailing `/` for directories only, a leading or inner
// `/` to anchor a pattern to its file's directory, and the glob syntax of ./glob.ts; a pattern
// without `/` matches a name at any depth below its file. Bundled into the image: imports only ./glob.ts.
import { globToRegExp } from './glob.ts';

/** The names of the ignore files read in each directory, in increasing precedence. */
export const IGNORE_FILES = ['.gitignore', '.ignore'] as const;

export interface IgnoreRule {
  /** Directory of the ignore file, relative to the search root ('' for the root itself). */
  base: string;
  re: RegExp;
  /** Matched against the path relative to `base` (else against the last name only). */
  anchored: boolean;
  dirOnly: boolean;
  negate: boolean;
}

/** The rules of one ignore file found in directory `base` (relative to the search root). */
export const parseIgnore = (text: string, base: string): IgnoreRule[] => {
  const rules: IgnoreRule[] = [];
  for (const raw of text.split('\n')) {
    let line = raw.replace(/\r$/, '').replace(/(?<!\\)\s+$/, '');
    if (line === '' || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    if (negate) line = line.slice(1);
    const dirOnly = line.endsWith('/');
    if (dirOnly) line = line.slice(0, -1);
    const anchored = line.includes('/');
    line = line.replace(/^\//, '').replace(/^\\/, '');
    if (line === '') continue;
    rules.push({ base, re: globToRegExp(line), anchored, dirOnly, negate });
  }
  return rules;
};

/** True when `rel` (relative to the search root) is hidden: a component starts with `.`. */
export const isHidden = (rel: string): boolean => rel.startsWith('.') || rel.includes('/.');

/**
 * True when the rules (of the root and of the directories above `rel`, in the order they were
 * read) exclude `rel` itself; a file inside an excluded directory is the walker's business (it
 * does not descend), or the caller checks each parent.
 */
export const isIgnored = (rules: readonly IgnoreRule[], rel: string, isDir: boolean): boolean => {
  let ignored = false;
  for (const rule of rules) {
    if (rule.dirOnly && !isDir) continue;
    if (rule.base !== '' && !rel.startsWith(`${rule.base}/`)) continue;
    const sub = rule.base === '' ? rel : rel.slice(rule.base.length + 1);
    const subject = rule.anchored ? sub : sub.slice(sub.lastIndexOf('/') + 1);
    if (rule.re.test(subject)) ignored = !rule.negate;
  }
  return ignored;
};
