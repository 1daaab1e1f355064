// A step budget for validating arguments against an outside JSON Schema (remote tools, plugins,
// MCP) on the API's one event loop. @cfworker/json-schema validates recursively with no bound of
// its own, so a schema can make one call cost as much as its author likes: `$ref`s that double at
// each of 40 levels visit 2^40 nodes (the loop freezes for every tenant), a `$ref` cycle overflows
// the stack, an `enum` of 40 000 values is compared against every item of a long array. Each node
// of the validation schema therefore carries a hidden (non-enumerable) getter for a keyword the
// validator reads on every visit of a node; it charges the node's cost to the budget of the
// current validation and throws when the budget is spent. The validator's caller turns that throw
// into an invalid-arguments result (`overBudget`). Invariant: validating one value against an
// instrumented schema visits at most STEP_BUDGET units of work, whatever the schema.

/** Work units (node visits, enum values and property names compared) one validation may use. */
export const STEP_BUDGET = 200_000;

/** The keyword @cfworker/json-schema destructures from every node it visits (validate.js). */
const PROBE = 'minContains';

const steps = { left: STEP_BUDGET };

class BudgetSpent extends Error {}

/** Starts a fresh budget for one (synchronous) validation. */
export const resetSteps = (): void => {
  steps.left = STEP_BUDGET;
};

const costOf = (node: Record<string, unknown>): number => {
  let cost = 1;
  if (Array.isArray(node.enum)) cost += node.enum.length;
  for (const key of ['properties', 'dependentSchemas', 'dependentRequired', 'dependencies']) {
    const map = node[key];
    if (typeof map === 'object' && map !== null) cost += Object.keys(map).length;
  }
  if (Array.isArray(node.required)) cost += node.required.length;
  return cost;
};

/** Puts the charging getter on every object of `schema` (a private copy: it is changed in place). */
export const instrument = <T>(schema: T): T => {
  const seen = new Set<object>();
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null || seen.has(node)) continue;
    seen.add(node);
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    const record = node as Record<string, unknown>;
    stack.push(...Object.values(record));
    const cost = costOf(record);
    const own = record[PROBE];
    delete record[PROBE];
    Object.defineProperty(record, PROBE, {
      enumerable: false,
      get() {
        steps.left -= cost;
        if (steps.left < 0) throw new BudgetSpent('over the validation budget');
        return own;
      },
    });
  }
  return schema;
};

/**
 * Whether a validator's throw means the schema was too costly for the value (the budget ran out,
 * the stack overflowed on a `$ref` cycle) or unusable (a `$ref` that resolves to nothing): the
 * arguments are then refused, never a 500.
 */
export const overBudget = (error: unknown): string | undefined => {
  if (error instanceof BudgetSpent)
    return `validating these arguments against the tool's schema takes more than ${STEP_BUDGET} steps; send a smaller value or simplify the schema`;
  if (error instanceof RangeError) return "the tool's schema recurses without end ($ref cycle)";
  if (error instanceof Error && error.message.startsWith('Unresolved $ref'))
    return "the tool's schema has a $ref that resolves to nothing";
  return undefined;
};
