// Tool-name globs for policy rules: `*` matches any run of characters, `?` exactly one; everything
// else is literal. Compiled once per rule, for the linear-time engine where the runtime has it (a
// glob such as `*a*a*a*a*b` is polynomial-time backtracking otherwise); runs of `*` collapse.
import { hasLinearEngine, LINEAR } from '../host/tools/linear-regexp.ts';

export const globToRegExp = (glob: string): RegExp => {
  let source = '';
  for (const char of glob) {
    if (char === '*') source += source.endsWith('.*') ? '' : '.*';
    else if (char === '?') source += '.';
    else source += char.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, hasLinearEngine() ? LINEAR : '');
};
