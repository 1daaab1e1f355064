// A program's call arguments held to what the HTTP surface lets through for a direct call
// (host/api/body.ts): no `__proto__`, `constructor` or `prototype` key at any depth (dropped, as a
// JSON body's are), and no nesting past the pipeline's argument depth. The program's JSON went
// straight from JSON.parse to onCall, so a `tools.*` call could carry both: a call nested a few
// thousand levels deep overflowed the stack where the durable log serialised it (STORE_FAILED,
// "try again", instead of the program's own mistake), and workflow steps walk arguments too.
// Iterative (no recursion, whatever the depth) and skipped for text that cannot need it.
import { MAX_ARGUMENT_DEPTH, MAX_VALUE_DEPTH, nestedDeeperThan } from '../json.ts';

export { MAX_ARGUMENT_DEPTH, MAX_VALUE_DEPTH, nestedDeeperThan };

const POISON = new Set(['__proto__', 'constructor', 'prototype']);
/** Text that may spell a POISON key (or escape one with \u); as host/api/body.ts's. */
const MAYBE_POISONED = /__proto__|constructor|prototype|\\u/;

const isContainer = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;

/**
 * Drops POISON keys from `value` in place; false when it nests arrays or objects more than
 * MAX_ARGUMENT_DEPTH levels deep (then it is left as it is: the call is refused).
 */
export function cleanArguments(value: unknown, json: string): boolean {
  // Text that opens fewer containers than the depth and names no POISON key needs no walk.
  const poisoned = MAYBE_POISONED.test(json);
  if (json.length <= MAX_ARGUMENT_DEPTH && !poisoned) return true;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (!isContainer(node)) continue;
    if (depth >= MAX_ARGUMENT_DEPTH) return false;
    for (const key of Object.keys(node)) {
      if (poisoned && POISON.has(key)) {
        delete node[key];
        continue;
      }
      const child = node[key];
      if (isContainer(child)) stack.push([child, depth + 1]);
    }
  }
  return true;
}
