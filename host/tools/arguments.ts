// Arguments a tool does not have. Models send the argument names of the tools they were trained on
// (Claude Code's grep `glob` or `-i`); a validator that strips them runs the call without what the
// model asked for and says nothing. So every call whose tool's model-facing schema closes its
// top level (`additionalProperties: false`, which defineTool sets for v.object and v.strictObject)
// is refused here, in the pipeline, for every kind of tool and every path to it (a batch, code
// mode's tools.*, MCP); a JSON Schema tool that leaves its object open keeps its extra arguments.
// Bounds: one pass over the argument keys; the message names at most a few of them, each cut.
import type { JsonSchema } from './types.ts';

const NAMED = 5;
const SHOWN_CHARS = 40;
const LISTED = 40;

const shown = (key: string): string =>
  JSON.stringify(key.length > SHOWN_CHARS ? `${key.slice(0, SHOWN_CHARS)}…` : key);

const namesOf = new WeakMap<JsonSchema, readonly string[] | null>();

/**
 * The argument names of a closed object schema (computed once per schema); undefined when extra
 * arguments are allowed.
 */
export const closedArgumentNames = (schema: JsonSchema): readonly string[] | undefined => {
  let names = namesOf.get(schema);
  if (names === undefined) {
    const properties = schema.properties;
    names =
      schema.additionalProperties !== false
        ? null
        : typeof properties === 'object' && properties !== null && !Array.isArray(properties)
          ? Object.keys(properties)
          : [];
    namesOf.set(schema, names);
  }
  return names ?? undefined;
};

/** Why `input` has arguments `names` lacks (a sentence), or undefined when it has none. */
export const unknownArgumentsIssue = (
  tool: string,
  names: readonly string[] | undefined,
  input: unknown,
): string | undefined => {
  if (names === undefined || typeof input !== 'object' || input === null || Array.isArray(input))
    return undefined;
  const known = new Set(names);
  const unknown: string[] = [];
  let count = 0;
  for (const key of Object.keys(input)) {
    if (known.has(key)) continue;
    if (++count <= NAMED) unknown.push(shown(key));
  }
  if (count === 0) return undefined;
  const more = count > NAMED ? ` and ${count - NAMED} more` : '';
  const valid =
    names.length === 0
      ? `${tool} takes no arguments`
      : `${tool} takes ${names.slice(0, LISTED).join(', ')}${names.length > LISTED ? ', …' : ''}`;
  return `${tool} has no argument${count === 1 ? '' : 's'} ${unknown.join(', ')}${more} (${valid})`;
};
