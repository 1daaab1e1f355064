// JSON Schemas from outside (remote tools, plugins, MCP) are validated on the API's one event loop, and
// @cfworker/json-schema runs every `pattern` with the backtracking engine: `^(a+)+$` against 30
// characters of an argument stalls every tenant. So before a schema reaches the validator, each
// `pattern` keyword is rewritten into a format check that runs on V8's linear-time engine
// (./linear-regexp.ts) within a per-validation budget, and `patternProperties` (whose keys
// would also run backtracking) is refused; `uniqueItems` (quadratic in the validator) is not enforced.
// Invariant: no client regex ever runs on the backtracking engine in the API process.
import { format } from '@cfworker/json-schema';
import { messageOf, SandboxError } from '../errors.ts';
import { linearRegExp, MATCH_BUDGET } from './linear-regexp.ts';
import type { JsonSchema, ToolDefinition, Validation } from './types.ts';

const FORMAT_PREFIX = 'dsh-linear-pattern:';

/** Matching cost left in the current (synchronous) validation. */
const budget = { left: MATCH_BUDGET };

const registerPattern = (source: string, where: string): string => {
  const key = `${FORMAT_PREFIX}${source}`;
  if (format[key] !== undefined) return key;
  let re: RegExp;
  try {
    re = linearRegExp(source);
  } catch (error) {
    throw new SandboxError(
      'INVALID_ARGUMENTS',
      `${where}: the pattern ${JSON.stringify(source.slice(0, 80))} is refused: ${messageOf(error)}.`,
    );
  }
  format[key] = (value: string) => {
    const cost = (value.length + 1) * (source.length + 1);
    if (cost > budget.left) return false; // too costly to decide here: the argument is invalid
    budget.left -= cost;
    return re.test(value);
  };
  return key;
};

const SCHEMA_MAPS = ['properties', '$defs', 'definitions', 'dependentSchemas'];
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const SCHEMA_ONE = [
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'additionalItems',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
];

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const rewrite = (schema: unknown, where: string, depth: number): unknown => {
  if (depth > 64) throw new SandboxError('INVALID_ARGUMENTS', `${where}: the schema is nested too deeply.`);
  if (!isObject(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'patternProperties')
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `${where}: "patternProperties" is not supported in remote tool schemas; list the properties, or use additionalProperties with propertyNames.pattern.`,
      );
    if (key === 'pattern' && typeof value === 'string') continue;
    // The validator compares every pair of items and records an error per duplicate pair: an
    // array of 100 000 zeros would take 10^10 steps and as many error objects (the process dies).
    // Not enforced on outside schemas; the model still sees it.
    if (key === 'uniqueItems') continue;
    if (SCHEMA_MAPS.includes(key) && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, rewrite(v, `${where}/${key}/${k}`, depth + 1)]),
      );
    } else if (SCHEMA_LISTS.includes(key) && Array.isArray(value)) {
      out[key] = value.map((v, i) => rewrite(v, `${where}/${key}/${i}`, depth + 1));
    } else if (SCHEMA_ONE.includes(key)) {
      out[key] = rewrite(value, `${where}/${key}`, depth + 1);
    } else if (key === 'items') {
      out[key] = Array.isArray(value)
        ? value.map((v, i) => rewrite(v, `${where}/items/${i}`, depth + 1))
        : rewrite(value, `${where}/items`, depth + 1);
    } else if (key === 'dependencies' && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([k, v]) => [
          k,
          Array.isArray(v) ? v : rewrite(v, `${where}/dependencies/${k}`, depth + 1),
        ]),
      );
    } else out[key] = value;
  }
  if (typeof schema.pattern === 'string') {
    const check = { format: registerPattern(schema.pattern, where) };
    out.allOf = Array.isArray(out.allOf) ? [...out.allOf, check] : [check];
  }
  return out;
};

/** Starts a fresh matching budget for one (synchronous) validation. */
export const resetMatchBudget = (): void => {
  budget.left = MATCH_BUDGET;
};

/** The schema the validator gets: every `pattern` as a linear-time format check. Throws INVALID_ARGUMENTS. */
export const validationSchemaOf = (schema: JsonSchema, where: string): JsonSchema =>
  rewrite(schema, where, 0) as JsonSchema;

/**
 * A tool made from the rewritten schema that still shows the model the client's own schema, and
 * whose argument validation runs within a fresh matching budget.
 */
export const withClientSchema = (tool: ToolDefinition, clientSchema: JsonSchema): ToolDefinition => {
  const { $schema: _ignored, ...parameters } = clientSchema;
  return Object.freeze({
    ...tool,
    parameters: Object.freeze({ type: 'object', ...parameters }),
    validateArguments: (input: unknown): Validation<Record<string, unknown>> => {
      budget.left = MATCH_BUDGET;
      return tool.validateArguments(input) as Validation<Record<string, unknown>>;
    },
  }) as ToolDefinition;
};
