// Glob patterns → RegExp, shared by everything that matches paths (sandboxd's glob and grep, and the
// memory provider on the host), so that every provider matches alike. Syntax: `*` (not across `/`),
// `**` (any depth, including none), `?`, `[abc]`/`[!abc]`, `{a,b}`. Patterns are matched against
// paths relative to the glob's cwd, with `/` separators. Bundled into the image: imports nothing.

const escapeChar = (c: string): string => (/[\\^$.*+?()[\]{}|/]/.test(c) ? `\\${c}` : c);

/** Compile a glob to an anchored RegExp over relative POSIX paths. */
export const globToRegExp = (pattern: string): RegExp => {
  let re = '';
  let braces = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        const atStart = i === 0 || pattern[i - 1] === '/';
        const slashAfter = pattern[i + 2] === '/';
        const atEnd = i + 2 === pattern.length;
        if (atStart && slashAfter) {
          re += '(?:[^/]*(?:/[^/]*)*/)?'; // `**/`: zero or more directories
          i += 2;
          continue;
        }
        if (atStart && atEnd) {
          re += '.*';
          i += 1;
          continue;
        }
        re += '[^/]*'; // `a**b` behaves like `a*b`
        i += 1;
        continue;
      }
      re += '[^/]*';
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end === -1) {
        re += '\\[';
        continue;
      }
      let body = pattern.slice(i + 1, end);
      if (body.startsWith('!')) body = `^${body.slice(1)}`;
      re += `[${body.replace(/\\/g, '\\\\')}]`;
      i = end;
    } else if (c === '{') {
      braces++;
      re += '(?:';
    } else if (c === '}' && braces > 0) {
      braces--;
      re += ')';
    } else if (c === ',' && braces > 0) {
      re += '|';
    } else {
      re += escapeChar(c);
    }
  }
  while (braces-- > 0) re += ')';
  return new RegExp(`^${re}$`);
};

/** True when the pattern has any glob syntax (used to split a literal directory prefix off). */
export const hasMagic = (segment: string): boolean => /[*?[{]/.test(segment);

/**
 * Matcher for grep's `include`: a pattern without `/` matches the base name (as ripgrep's `-g` does);
 * one with `/` matches the path relative to the search root.
 */
export const includeMatcher = (include: string | undefined): ((relPath: string) => boolean) => {
  if (include === undefined || include === '') return () => true;
  const re = globToRegExp(include.replace(/^\.\//, ''));
  if (!include.includes('/')) return (rel) => re.test(rel.slice(rel.lastIndexOf('/') + 1));
  return (rel) => re.test(rel);
};
