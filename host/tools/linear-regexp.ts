// Regular expressions from tenants (policy rule globs and argument conditions) run in the API
// process, on its one event loop: a backtracking pattern such as `^(a+)+$` against 30 characters
// would stall every tenant's requests for minutes. So tenant patterns are compiled for V8's
// linear-time engine (the `l` flag, enabled here once), which refuses patterns that need
// backtracking (backreferences, lookarounds, large counted repeats). Even linear matching costs
// about value length x pattern length, so callers also bound that product (MATCH_BUDGET).
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--enable-experimental-regexp-engine');

/** Longest tenant pattern (argument condition or tool glob) in characters. */
export const MAX_PATTERN_CHARS = 512;

/** Budget of (value length + 1) x (pattern length + 1) units one tool call may spend on conditions. */
export const MATCH_BUDGET = 10_000_000;

/** V8's flag for the linear-time engine (a variable: no linter turns it into a literal). */
export const LINEAR: string = 'l';

let linearAvailable: boolean | undefined;

/** True when this runtime offers the linear-time engine. */
export const hasLinearEngine = (): boolean => {
  if (linearAvailable === undefined) {
    try {
      new RegExp('a', LINEAR);
      linearAvailable = true;
    } catch {
      linearAvailable = false;
    }
  }
  return linearAvailable;
};

/**
 * Compiles `source` for the linear-time engine. Throws SyntaxError for invalid patterns and for
 * patterns the linear engine cannot run (or when the runtime has no linear engine at all).
 */
export const linearRegExp = (source: string): RegExp => {
  if (source.length > MAX_PATTERN_CHARS)
    throw new SyntaxError(`the pattern is longer than ${MAX_PATTERN_CHARS} characters`);
  if (!hasLinearEngine()) throw new SyntaxError('this runtime has no linear-time regular expression engine');
  try {
    return new RegExp(source, LINEAR);
  } catch (error) {
    const message = (error as Error).message;
    if (/linear time/i.test(message))
      throw new SyntaxError(
        'it cannot be matched in linear time (no backreferences, lookarounds or large counted repeats)',
      );
    throw error;
  }
};
