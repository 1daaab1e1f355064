// The JSON vocabulary every room shares (the store, the tool runtime, host requests, the isolate
// host): values that survive JSON.stringify/JSON.parse unchanged, and the depth bound every value
// from outside is held to. Like host/errors.ts it sits below every room and imports nothing.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object: the shape of most payloads, answers and event data. */
export type JsonObject = { [key: string]: JsonValue };

/** Deepest nesting of arrays and objects a tool call's arguments may have (the pipeline's, and code mode's before it). */
export const MAX_ARGUMENT_DEPTH = 64;

const isContainer = (value: unknown): value is object => typeof value === 'object' && value !== null;

/**
 * True when `value` nests arrays or objects more than `limit` levels deep. Iterative (no recursion,
 * so no stack overflow on `[[[…]]]` 100,000 deep), and it stops at the first node past the bound.
 */
export const nestedDeeperThan = (value: unknown, limit: number): boolean => {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (!isContainer(node)) continue;
    if (depth >= limit) return true;
    for (const child of Object.values(node)) if (isContainer(child)) stack.push([child, depth + 1]);
  }
  return false;
};
