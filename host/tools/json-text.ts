// JSON text of a canonical value for the model (the default renderer, workflow results).
// Pretty-printing is quadratic in nesting depth (`[[[…]]]` 5,000 deep is 10 KB compact and 50 MB
// with two-space indents), and this runs on the control plane's event loop, so a value is
// pretty-printed only when it is at most PRETTY_DEPTH deep and PRETTY_CHARS long as compact JSON
// (then its pretty form is at most about 2 MB); otherwise it is shown compact. Either way the cost
// is linear in the value's compact JSON, whose size the callers bound (API body, isolate caps).
import { nestedDeeperThan } from './json-walk.ts';

export const PRETTY_DEPTH = 32;
export const PRETTY_CHARS = 64 * 1024;

export const jsonText = (value: unknown): string => {
  let compact: string | undefined;
  try {
    compact = JSON.stringify(value);
  } catch {
    return '(the value could not be shown as JSON: it is nested too deeply or too large)';
  }
  if (compact === undefined) return 'null';
  if (compact.length > PRETTY_CHARS || nestedDeeperThan(value, PRETTY_DEPTH)) return compact;
  return JSON.stringify(value, null, 2);
};
