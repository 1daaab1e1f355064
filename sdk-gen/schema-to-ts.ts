// JSON Schema → TsType for one root schema (a tool's parameters or its output).
//
// Invariants:
// - Only local `$ref`s (`#`, `#/$defs/…`, `#/definitions/…`) are followed; each target becomes
//   one named type, converted once. Nothing is ever fetched or read from disk.
// - A named type never contains itself outside an object property, array or tuple element
//   (TypeScript rejects `type A = A | string`); such a reference becomes `unknown`.
// - Every keyword is read as an own property and shape-checked: schemas are untrusted.
// - Anything unsupported widens to `unknown` (or is ignored, for keywords that only narrow,
//   such as `not`, `if`, `format`, `minLength`), so the type never rejects a valid value.
//   Throwing (hostile getters, exhausted stack, over MAX_SUBSCHEMAS) is the caller's per-tool
//   fallback.
// This module drives a root's conversion and collects its named types: schema-convert.ts converts
// a node (refs, combinators, types); schema-values.ts reads literals, own properties and pointers.
import { type ConvertOptions, type ConvertState, convert, finish, type Target } from './schema-convert.ts';
import { isRecord, own } from './schema-values.ts';
import { type TsType, UNKNOWN } from './ts-type.ts';

export { type ConvertOptions, MAX_SUBSCHEMAS } from './schema-convert.ts';

export interface NamedType {
  name: string;
  type: TsType;
  description: string | undefined;
}

export interface ConvertResult {
  root: TsType;
  /** Named types for `$ref` targets (the root included when `#` is referenced), in first-reference order. */
  named: NamedType[];
}

export function convertSchema(schema: unknown, options: ConvertOptions): ConvertResult {
  const rootTarget: Target = { name: options.rootName, schema, state: 'active', type: UNKNOWN };
  const state: ConvertState = {
    schema,
    options,
    targets: new Map([['#', rootTarget]]),
    queue: [],
    visited: 0,
  };
  const { targets, queue } = state;

  rootTarget.type = convert(state, schema, 0, false);
  rootTarget.state = 'done';
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    if (next.state === 'pending') finish(state, next);
  }
  const named: NamedType[] = [];
  for (const [pointer, target] of targets) {
    if (pointer === '#') continue;
    const description = isRecord(target.schema) ? own(target.schema, 'description') : undefined;
    named.push({
      name: target.name,
      type: target.type,
      description: typeof description === 'string' ? description : undefined,
    });
  }
  return { root: rootTarget.type, named };
}
