// Reading untrusted schema values for schema-convert.ts: a `const`/`enum` value as a literal type,
// own-property reads, and local JSON Pointers.
// Invariants: every keyword is read as an own property (`own`), never through the prototype; a
// literal past `maxDepth` is `unknown`, a non-finite number is `number`; a malformed pointer or a
// missing segment resolves to undefined, never throws.
import { keyword, type TsMember, type TsType, UNKNOWN } from './ts-type.ts';

export function literal(value: unknown, depth: number, maxDepth: number): TsType {
  if (depth > maxDepth) return UNKNOWN;
  if (value === null) return keyword('null');
  if (typeof value === 'string' || typeof value === 'boolean')
    return { kind: 'literal', text: JSON.stringify(value) };
  if (typeof value === 'number')
    return Number.isFinite(value) ? { kind: 'literal', text: String(value) } : keyword('number');
  if (Array.isArray(value)) {
    const elements = value.map((item) => literal(item, depth + 1, maxDepth));
    return { kind: 'tuple', elements, required: elements.length, rest: undefined };
  }
  if (isRecord(value)) {
    const members = Object.keys(value).map(
      (name): TsMember => ({
        name,
        type: literal(value[name], depth + 1, maxDepth),
        optional: false,
        description: undefined,
        default: undefined,
      }),
    );
    return { kind: 'object', members, index: undefined };
  }
  return UNKNOWN;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function own(node: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(node, key) ? node[key] : undefined;
}

/** JSON Pointer segments of a URI fragment, or undefined when it is malformed. */
export function decodePointer(path: string): string[] | undefined {
  try {
    return path
      .split('/')
      .map((segment) => decodeURIComponent(segment).replace(/~1/g, '/').replace(/~0/g, '~'));
  } catch {
    return undefined;
  }
}

export function walk(root: unknown, segments: readonly string[]): unknown {
  let node = root;
  for (const segment of segments) {
    if (Array.isArray(node) && /^(0|[1-9][0-9]*)$/.test(segment)) node = node[Number(segment)];
    else if (isRecord(node) && Object.hasOwn(node, segment)) node = node[segment];
    else return undefined;
  }
  return node;
}
