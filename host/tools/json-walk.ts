// Bounded walks over JSON-like values from outside (tool arguments, values to render): the depth
// check the pipeline applies to every call's arguments, and the scalar walk that policy conditions
// use. Both are iterative (no recursion, so no stack overflow on `[[[…]]]` 100,000 deep) and stop
// as soon as a bound is crossed, so their cost is linear in the part of the value they visit.

import { MAX_ARGUMENT_DEPTH, MAX_VALUE_DEPTH, nestedDeeperThan } from '../json.ts';

export { MAX_ARGUMENT_DEPTH, MAX_VALUE_DEPTH, nestedDeeperThan };

const isContainer = (value: unknown): value is object => typeof value === 'object' && value !== null;

export interface ScalarWalkLimits {
  /** Deepest nesting visited; deeper values make the walk incomplete. */
  maxDepth: number;
  /** Nodes (containers, keys and scalars) visited at most. */
  maxNodes: number;
}

/**
 * Calls `visit` with the text of every string, number and boolean inside `value` (the value itself
 * when it is one) and with every object key, until `visit` returns false. Answers 'complete' when
 * every scalar was visited, 'stopped' when `visit` stopped it, 'too-big' when a limit was reached
 * first (the caller then decides without having seen everything, and should fail closed).
 */
export const walkScalars = (
  value: unknown,
  visit: (text: string) => boolean,
  limits: ScalarWalkLimits,
): 'complete' | 'stopped' | 'too-big' => {
  const stack: [unknown, number][] = [[value, 0]];
  let nodes = 0;
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (++nodes > limits.maxNodes) return 'too-big';
    if (typeof node === 'string' || typeof node === 'number' || typeof node === 'boolean') {
      if (!visit(String(node))) return 'stopped';
      continue;
    }
    if (!isContainer(node)) continue;
    if (depth >= limits.maxDepth) return 'too-big';
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], depth + 1]);
      continue;
    }
    const entries = Object.entries(node);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i] as [string, unknown];
      stack.push([child, depth + 1], [key, depth + 1]);
    }
  }
  return 'complete';
};
