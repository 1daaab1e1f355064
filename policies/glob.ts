// Tool-name globs for policy rules: `*` matches any run of characters, `?` exactly one; everything
// else is literal. Compiled once per rule.

export const globToRegExp = (glob: string): RegExp => {
  let source = '';
  for (const char of glob) {
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else source += char.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
};
