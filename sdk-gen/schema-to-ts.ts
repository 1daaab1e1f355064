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
import { toPascal } from './names.ts';
import { intersection, keyword, NEVER, type TsMember, type TsType, UNKNOWN, union } from './ts-type.ts';

export interface NamedType {
  name: string;
  type: TsType;
  description: string | undefined;
}

export interface ConvertOptions {
  /** The name `#` refers to; the caller decides whether to emit the root under it. */
  rootName: string;
  /** Prefix of named types made from `$defs` (the tool's Pascal name). */
  prefix: string;
  maxDepth: number;
  /** Hands out a unique type name for a base name. */
  allocate: (base: string) => string;
}

export interface ConvertResult {
  root: TsType;
  /** Named types for `$ref` targets (the root included when `#` is referenced), in first-reference order. */
  named: NamedType[];
}

interface Target {
  name: string;
  schema: unknown;
  state: 'pending' | 'active' | 'done';
  type: TsType;
}

const LOCAL_REF = /^#\/(\$defs|definitions)\/(.+)$/;

/**
 * Subschemas converted per root before conversion gives up (and the caller falls back to
 * `unknown`): bounds the time and the size of the text a single schema can cost.
 */
export const MAX_SUBSCHEMAS = 10_000;

export function convertSchema(schema: unknown, options: ConvertOptions): ConvertResult {
  const targets = new Map<string, Target>();
  const queue: Target[] = [];
  const rootTarget: Target = { name: options.rootName, schema, state: 'active', type: UNKNOWN };
  targets.set('#', rootTarget);

  const finish = (target: Target): void => {
    target.state = 'active';
    target.type = convert(target.schema, 0, false);
    target.state = 'done';
  };

  // `deferred`: we are inside an object property, array or tuple element, where TypeScript
  // allows a type to refer to itself.
  const reference = (pointer: string, deferred: boolean): TsType => {
    let target = targets.get(pointer);
    if (target === undefined) {
      const match = LOCAL_REF.exec(pointer);
      const segments = match?.[2] === undefined ? undefined : decodePointer(match[2]);
      const resolved = segments === undefined ? undefined : walk(schema, [match?.[1] ?? '', ...segments]);
      if (resolved === undefined) return UNKNOWN;
      const base = `${options.prefix}${toPascal(segments?.join('_') ?? '')}`;
      target = { name: options.allocate(base), schema: resolved, state: 'pending', type: UNKNOWN };
      targets.set(pointer, target);
      queue.push(target);
    }
    if (!deferred) {
      if (target.state === 'active') return UNKNOWN;
      if (target.state === 'pending') finish(target);
    }
    return { kind: 'ref', name: target.name };
  };

  let visited = 0;
  const convert = (node: unknown, depth: number, deferred: boolean): TsType => {
    if (depth > options.maxDepth) return UNKNOWN;
    if (++visited > MAX_SUBSCHEMAS) throw new Error(`schema has more than ${MAX_SUBSCHEMAS} subschemas`);
    if (node === true) return UNKNOWN;
    if (node === false) return NEVER;
    if (!isRecord(node)) return UNKNOWN;
    const parts: TsType[] = [];
    const ref = own(node, '$ref');
    if (typeof ref === 'string') parts.push(reference(ref, deferred));
    parts.push(base(node, depth));
    for (const key of ['anyOf', 'oneOf'] as const) {
      const list = own(node, key);
      if (Array.isArray(list) && list.length > 0) {
        parts.push(union(list.map((item) => convert(item, depth + 1, deferred))));
      }
    }
    const all = own(node, 'allOf');
    if (Array.isArray(all)) for (const item of all) parts.push(convert(item, depth + 1, deferred));
    const type = intersection(parts);
    return own(node, 'nullable') === true ? union([type, keyword('null')]) : type;
  };

  const base = (node: Record<string, unknown>, depth: number): TsType => {
    if (Object.hasOwn(node, 'const')) return literal(own(node, 'const'), depth);
    const values = own(node, 'enum');
    if (Array.isArray(values)) return union(values.map((value) => literal(value, depth)));
    const type = own(node, 'type');
    if (typeof type === 'string') return forType(type, node, depth);
    if (Array.isArray(type)) {
      const names = type.filter((name): name is string => typeof name === 'string');
      return names.length === 0 ? UNKNOWN : union(names.map((name) => forType(name, node, depth)));
    }
    if (
      ['properties', 'additionalProperties', 'patternProperties', 'required'].some((k) =>
        Object.hasOwn(node, k),
      )
    ) {
      return object(node, depth);
    }
    if (Object.hasOwn(node, 'items') || Object.hasOwn(node, 'prefixItems')) return array(node, depth);
    return UNKNOWN;
  };

  const forType = (name: string, node: Record<string, unknown>, depth: number): TsType => {
    switch (name) {
      case 'string':
      case 'boolean':
      case 'null':
      case 'number':
        return keyword(name);
      case 'integer':
        return keyword('number');
      case 'object':
        return object(node, depth);
      case 'array':
        return array(node, depth);
      default:
        return UNKNOWN;
    }
  };

  const object = (node: Record<string, unknown>, depth: number): TsType => {
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
          type: convert(sub, depth + 1, true),
          optional: !required.has(name),
          description:
            isRecord(sub) && typeof own(sub, 'description') === 'string'
              ? (own(sub, 'description') as string)
              : undefined,
          default:
            isRecord(sub) && Object.hasOwn(sub, 'default') ? { value: own(sub, 'default') } : undefined,
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
    if (additional === true || isRecord(additional)) indexParts.push(convert(additional, depth + 1, true));
    const patterns = own(node, 'patternProperties');
    if (isRecord(patterns))
      for (const key of Object.keys(patterns)) indexParts.push(convert(patterns[key], depth + 1, true));
    if (additional === undefined && !isRecord(properties) && !isRecord(patterns)) indexParts.push(UNKNOWN);
    let index: TsType | undefined = indexParts.length > 0 ? union(indexParts) : undefined;
    if (index !== undefined && index.kind === 'keyword' && index.name === 'never') index = undefined;
    if (index !== undefined && members.length > 0) {
      // Every property must fit the index signature (TS2411).
      const optional = members.some((member) => member.optional) ? [keyword('undefined')] : [];
      index = union([index, ...members.map((member) => member.type), ...optional]);
    }
    return { kind: 'object', members, index };
  };

  const array = (node: Record<string, unknown>, depth: number): TsType => {
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
      return { kind: 'array', element: items === undefined ? UNKNOWN : convert(items, depth + 1, true) };
    }
    const elements = tuple.map((item) => convert(item, depth + 1, true));
    const minItems = own(node, 'minItems');
    const required =
      typeof minItems === 'number' && minItems > 0 ? Math.min(elements.length, Math.floor(minItems)) : 0;
    // No rest keyword: closed. JSON Schema would allow extra items, but no tool means that.
    let restType = rest === undefined || rest === false ? undefined : convert(rest, depth + 1, true);
    if (restType !== undefined && restType.kind === 'keyword' && restType.name === 'never')
      restType = undefined;
    return { kind: 'tuple', elements, required, rest: restType };
  };

  const literal = (value: unknown, depth: number): TsType => {
    if (depth > options.maxDepth) return UNKNOWN;
    if (value === null) return keyword('null');
    if (typeof value === 'string' || typeof value === 'boolean')
      return { kind: 'literal', text: JSON.stringify(value) };
    if (typeof value === 'number')
      return Number.isFinite(value) ? { kind: 'literal', text: String(value) } : keyword('number');
    if (Array.isArray(value)) {
      const elements = value.map((item) => literal(item, depth + 1));
      return { kind: 'tuple', elements, required: elements.length, rest: undefined };
    }
    if (isRecord(value)) {
      const members = Object.keys(value).map(
        (name): TsMember => ({
          name,
          type: literal(value[name], depth + 1),
          optional: false,
          description: undefined,
          default: undefined,
        }),
      );
      return { kind: 'object', members, index: undefined };
    }
    return UNKNOWN;
  };

  rootTarget.type = convert(schema, 0, false);
  rootTarget.state = 'done';
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    if (next.state === 'pending') finish(next);
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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function own(node: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(node, key) ? node[key] : undefined;
}

/** JSON Pointer segments of a URI fragment, or undefined when it is malformed. */
function decodePointer(path: string): string[] | undefined {
  try {
    return path
      .split('/')
      .map((segment) => decodeURIComponent(segment).replace(/~1/g, '/').replace(/~0/g, '~'));
  } catch {
    return undefined;
  }
}

function walk(root: unknown, segments: readonly string[]): unknown {
  let node = root;
  for (const segment of segments) {
    if (Array.isArray(node) && /^(0|[1-9][0-9]*)$/.test(segment)) node = node[Number(segment)];
    else if (isRecord(node) && Object.hasOwn(node, segment)) node = node[segment];
    else return undefined;
  }
  return node;
}
