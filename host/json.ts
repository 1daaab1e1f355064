// The JSON vocabulary every room shares (the store, the tool runtime, host requests, the isolate
// host): values that survive JSON.stringify/JSON.parse unchanged, and the depth bound every value
// from outside is held to. Like host/errors.ts it sits below every room and imports nothing.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object: the shape of most payloads, answers and event data. */
export type JsonObject = { [key: string]: JsonValue };

/** Deepest nesting of arrays and objects a tool call's arguments may have (the pipeline's, and code mode's before it). */
export const MAX_ARGUMENT_DEPTH = 64;

/**
 * Deepest nesting of a value coming back from untrusted code (a tool's result: a program's return
 * value, an MCP server's structured content, a plugin tool's result; the pipeline holds every
 * tool's result to it). Looser than arguments' (nothing walks it by schema), but far from where the
 * host's own recursive JSON.stringify overflows (measured: a run_code value 5,000 levels deep made
 * POST /calls answer 500 INTERNAL; 3,000 passed).
 */
export const MAX_VALUE_DEPTH = 256;

const isContainer = (value: unknown): value is object => typeof value === 'object' && value !== null;

/**
 * True when `value` nests arrays or objects more than `limit` levels deep. Iterative (no recursion,
 * so no stack overflow on `[[[…]]]` 100,000 deep), depth first, and it stops at the first node past
 * the bound. It runs on every tool result (host/tools/pipeline.ts), so it allocates nothing per
 * node but the stack: two parallel arrays, arrays walked by index (a [node, depth] pair and
 * Object.values per node cost 3-10 times as much: a 5-field result 70-120 ns, a 10,000-row one
 * 0.5-0.8 ms, 256 levels of `[[…]]` 2-4 µs).
 */
export const nestedDeeperThan = (value: unknown, limit: number): boolean => {
  if (!isContainer(value)) return false;
  if (limit <= 0) return true;
  const nodes: object[] = [];
  const depths: number[] = [];
  let node: object | undefined = value;
  let depth = 0;
  while (node !== undefined) {
    const children: readonly unknown[] = Array.isArray(node) ? node : Object.values(node);
    for (let i = 0; i < children.length; i++) {
      const child = children[i];
      if (!isContainer(child)) continue;
      if (depth + 1 >= limit) return true;
      nodes.push(child);
      depths.push(depth + 1);
    }
    node = nodes.pop();
    depth = depths.pop() ?? 0;
  }
  return false;
};
