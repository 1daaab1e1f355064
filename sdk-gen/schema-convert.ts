// The recursive conversion of one schema node to a TsType (schema-to-ts.ts drives it over a root
// and the `$ref` targets it queues): `$ref`s, the combinators, and every `type` a schema can name.
// Invariants: only local `$ref`s are followed, each target converted once (its state goes pending,
// active, done); a named type never contains itself outside an object property, array or tuple
// element (`deferred`), and such a reference becomes `unknown`; past `maxDepth` a node is
// `unknown`; past MAX_SUBSCHEMAS nodes conversion throws (the caller's per-tool fallback).
import { toPascal } from './names.ts';
import { decodePointer, isRecord, literal, own, walk } from './schema-values.ts';
import { intersection, keyword, NEVER, type TsMember, type TsType, UNKNOWN, union } from './ts-type.ts';

export interface ConvertOptions {
  /** The name `#` refers to; the caller decides whether to emit the root under it. */
  rootName: string;
  /** Prefix of named types made from `$defs` (the tool's Pascal name). */
  prefix: string;
  maxDepth: number;
  /** Hands out a unique type name for a base name. */
  allocate: (base: string) => string;
}

export interface Target {
  name: string;
  schema: unknown;
  state: 'pending' | 'active' | 'done';
  type: TsType;
}

/** One root's conversion: its `$ref` targets by pointer, those still to convert, nodes seen. */
export interface ConvertState {
  readonly schema: unknown;
  readonly options: ConvertOptions;
  readonly targets: Map<string, Target>;
  readonly queue: Target[];
  visited: number;
}

const LOCAL_REF = /^#\/(\$defs|definitions)\/(.+)$/;

/**
 * Subschemas converted per root before conversion gives up (and the caller falls back to
 * `unknown`): bounds the time and the size of the text a single schema can cost.
 */
export const MAX_SUBSCHEMAS = 10_000;

export function finish(state: ConvertState, target: Target): void {
  target.state = 'active';
  target.type = convert(state, target.schema, 0, false);
  target.state = 'done';
}

// `deferred`: we are inside an object property, array or tuple element, where TypeScript
// allows a type to refer to itself.
function reference(state: ConvertState, pointer: string, deferred: boolean): TsType {
  const { options, targets, queue } = state;
  let target = targets.get(pointer);
  if (target === undefined) {
    const match = LOCAL_REF.exec(pointer);
    const segments = match?.[2] === undefined ? undefined : decodePointer(match[2]);
    const resolved = segments === undefined ? undefined : walk(state.schema, [match?.[1] ?? '', ...segments]);
    if (resolved === undefined) return UNKNOWN;
    const base = `${options.prefix}${toPascal(segments?.join('_') ?? '')}`;
    target = { name: options.allocate(base), schema: resolved, state: 'pending', type: UNKNOWN };
    targets.set(pointer, target);
    queue.push(target);
  }
  if (!deferred) {
    if (target.state === 'active') return UNKNOWN;
    if (target.state === 'pending') finish(state, target);
  }
  return { kind: 'ref', name: target.name };
}

export function convert(state: ConvertState, node: unknown, depth: number, deferred: boolean): TsType {
  if (depth > state.options.maxDepth) return UNKNOWN;
  if (++state.visited > MAX_SUBSCHEMAS) throw new Error(`schema has more than ${MAX_SUBSCHEMAS} subschemas`);
  if (node === true) return UNKNOWN;
  if (node === false) return NEVER;
  if (!isRecord(node)) return UNKNOWN;
  const parts: TsType[] = [];
  const ref = own(node, '$ref');
  if (typeof ref === 'string') parts.push(reference(state, ref, deferred));
  parts.push(base(state, node, depth));
  for (const key of ['anyOf', 'oneOf'] as const) {
    const list = own(node, key);
    if (Array.isArray(list) && list.length > 0) {
      parts.push(union(list.map((item) => convert(state, item, depth + 1, deferred))));
    }
  }
  const all = own(node, 'allOf');
  if (Array.isArray(all)) for (const item of all) parts.push(convert(state, item, depth + 1, deferred));
  const type = intersection(parts);
  return own(node, 'nullable') === true ? union([type, keyword('null')]) : type;
}

function base(state: ConvertState, node: Record<string, unknown>, depth: number): TsType {
  if (Object.hasOwn(node, 'const')) return literal(own(node, 'const'), depth, state.options.maxDepth);
  const values = own(node, 'enum');
  if (Array.isArray(values))
    return union(values.map((value) => literal(value, depth, state.options.maxDepth)));
  const type = own(node, 'type');
  if (typeof type === 'string') return forType(state, type, node, depth);
  if (Array.isArray(type)) {
    const names = type.filter((name): name is string => typeof name === 'string');
    return names.length === 0 ? UNKNOWN : union(names.map((name) => forType(state, name, node, depth)));
  }
  if (
    ['properties', 'additionalProperties', 'patternProperties', 'required'].some((k) =>
      Object.hasOwn(node, k),
    )
  ) {
    return object(state, node, depth);
  }
  if (Object.hasOwn(node, 'items') || Object.hasOwn(node, 'prefixItems')) return array(state, node, depth);
  return UNKNOWN;
}

function forType(state: ConvertState, name: string, node: Record<string, unknown>, depth: number): TsType {
  switch (name) {
    case 'string':
    case 'boolean':
    case 'null':
    case 'number':
      return keyword(name);
    case 'integer':
      return keyword('number');
    case 'object':
      return object(state, node, depth);
    case 'array':
      return array(state, node, depth);
    default:
      return UNKNOWN;
  }
}

function object(state: ConvertState, node: Record<string, unknown>, depth: number): TsType {
  const properties = own(node, 'properties');
  const requiredList = own(node, 'required');
  const required = new Set(
    Array.isArray(requiredList) ? requiredList.filter((key): key is string => typeof key === 'string') : [],
  );
  const members: TsMember[] = [];
  if (isRecord(properties)) {
    for (const name of Object.keys(properties)) {
      const sub = properties[name];
      members.push({
        name,
        type: convert(state, sub, depth + 1, true),
        optional: !required.has(name),
        description:
          isRecord(sub) && typeof own(sub, 'description') === 'string'
            ? (own(sub, 'description') as string)
            : undefined,
        default: isRecord(sub) && Object.hasOwn(sub, 'default') ? { value: own(sub, 'default') } : undefined,
      });
    }
  }
  for (const name of required) {
    if (!members.some((member) => member.name === name)) {
      members.push({ name, type: UNKNOWN, optional: false, description: undefined, default: undefined });
    }
  }
  const indexParts: TsType[] = [];
  const additional = own(node, 'additionalProperties');
  if (additional === true || isRecord(additional))
    indexParts.push(convert(state, additional, depth + 1, true));
  const patterns = own(node, 'patternProperties');
  if (isRecord(patterns))
    for (const key of Object.keys(patterns)) indexParts.push(convert(state, patterns[key], depth + 1, true));
  if (additional === undefined && !isRecord(properties) && !isRecord(patterns)) indexParts.push(UNKNOWN);
  let index: TsType | undefined = indexParts.length > 0 ? union(indexParts) : undefined;
  if (index !== undefined && index.kind === 'keyword' && index.name === 'never') index = undefined;
  if (index !== undefined && members.length > 0) {
    // Every property must fit the index signature (TS2411).
    const optional = members.some((member) => member.optional) ? [keyword('undefined')] : [];
    index = union([index, ...members.map((member) => member.type), ...optional]);
  }
  return { kind: 'object', members, index };
}

function array(state: ConvertState, node: Record<string, unknown>, depth: number): TsType {
  const items = own(node, 'items');
  const prefixItems = own(node, 'prefixItems');
  let tuple: unknown[] | undefined;
  let rest: unknown;
  if (Array.isArray(prefixItems)) {
    tuple = prefixItems;
    rest = items;
  } else if (Array.isArray(items)) {
    tuple = items;
    rest = own(node, 'additionalItems');
  }
  if (tuple === undefined) {
    return { kind: 'array', element: items === undefined ? UNKNOWN : convert(state, items, depth + 1, true) };
  }
  const elements = tuple.map((item) => convert(state, item, depth + 1, true));
  const minItems = own(node, 'minItems');
  const required =
    typeof minItems === 'number' && minItems > 0 ? Math.min(elements.length, Math.floor(minItems)) : 0;
  // No rest keyword: closed. JSON Schema would allow extra items, but no tool means that.
  let restType = rest === undefined || rest === false ? undefined : convert(state, rest, depth + 1, true);
  if (restType !== undefined && restType.kind === 'keyword' && restType.name === 'never')
    restType = undefined;
  return { kind: 'tuple', elements, required, rest: restType };
}
