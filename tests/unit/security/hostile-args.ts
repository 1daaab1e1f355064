// Hostile but schema-valid tool arguments, generated with fast-check from a tool's model-facing
// JSON Schema (the subset our tools and valibot's converter emit: object, string, integer, number,
// boolean, array, enum, anyOf, and `{}` for unknown values). Strings lean towards what breaks text
// code: empty and huge strings, lone surrogates, RTL overrides, NUL, combining marks, CR/LF runs,
// terminal escape sequences, and paths of the fuzz workspace's own files so that tools touch them.
// Numbers lean towards their bounds. Unknown values are deep arrays and objects.
import fc from 'fast-check';
import type { JsonSchema } from '../../../host/tools/types.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Big enough to hurt, small enough that a call stays under the API's 1 MiB JSON body. */
const HUGE = 400_000;

/** Files the fuzz writes into every workspace (see tool-fuzz.worker.ts). */
export const WORKSPACE_PATHS = [
  'a.txt',
  '/workspace/a.txt',
  'big.txt',
  '/workspace/newlines.txt',
  'one-line.txt',
  'crlf.txt',
  'escapes.txt',
  'unicode.txt',
  'bin.dat',
  'img.png',
  'dir',
  'dir/sub/deep.txt',
  'many',
  '.',
  '/workspace',
  'missing.txt',
  '../../etc/passwd',
  '/etc/passwd',
  '/workspace/../workspace/a.txt',
];

const nest = (depth: number, leaf: Json, asObject: boolean): Json => {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = asObject ? { k: value } : [value];
  return value;
};

/** Fixed hostile strings: each is a known way to break text code. */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  'a',
  '\n',
  '\r\n',
  '\u0000',
  'a\u0000b',
  '\uD800',
  'x\uDC00\uD800y',
  '\u202Eevil.txt\u202C',
  '\u200B\uFEFF\u2028\u2029',
  'e\u0301\u0302\u0303\u0304\u0305',
  '\u{1F469}\u200D\u{1F469}\u200D\u{1F467}',
  "$&$1$$`'",
  '\\',
  '%s%n%x',
  'hello',
  'line 1\nline 2\n',
  'DONE',
  '\u001b[31mred\u001b[0m',
  '\u0003',
  'a'.repeat(HUGE),
  '\n'.repeat(HUGE),
  '\r'.repeat(HUGE),
  'e\u0301'.repeat(HUGE / 4),
  '\uD800'.repeat(HUGE / 8),
  `\u001b[${'1;'.repeat(HUGE / 2)}`,
  `\u001b]0;${'t'.repeat(HUGE)}`,
  '\u001b[2K\r'.repeat(HUGE / 8),
  'ab\r'.repeat(HUGE / 3),
  '\u0000'.repeat(1000),
  'x\n'.repeat(HUGE / 2),
];

/** A code unit of any kind, lone surrogates and controls included. */
const anyUnit = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
  fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)),
  fc.constantFrom('\u0301', '\u202E', '\u200F', '\n', '\r', '\t', '\u001b', 'a', '/', '.', '*'),
);

const fitLength = (s: string, min: number, max: number): string => {
  const cut = s.length > max ? s.slice(0, max) : s;
  return cut.length < min ? cut + 'x'.repeat(min - cut.length) : cut;
};

const PATH_KEYS = new Set(['path', 'file_path', 'cwd', 'workdir']);

const stringArb = (schema: JsonSchema, key: string): fc.Arbitrary<string> => {
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as string[]));
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Number.MAX_SAFE_INTEGER;
  const choices: fc.WeightedArbitrary<string>[] = [
    { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_STRINGS.filter((s) => s.length < 1000)) },
    { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_STRINGS.filter((s) => s.length >= 1000)) },
    { weight: 4, arbitrary: fc.string({ unit: anyUnit, maxLength: 40 }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.string({ unit: anyUnit, minLength: 1, maxLength: 8 }), fc.integer({ min: 2, max: 20_000 }))
        .map(([s, n]) => s.repeat(n)),
    },
  ];
  if (PATH_KEYS.has(key)) choices.push({ weight: 10, arbitrary: fc.constantFrom(...WORKSPACE_PATHS) });
  return fc.oneof(...choices).map((s) => fitLength(s, min, max));
};

const numberArb = (schema: JsonSchema, integer: boolean): fc.Arbitrary<number> => {
  const min = typeof schema.minimum === 'number' ? schema.minimum : -Number.MAX_SAFE_INTEGER;
  const max = typeof schema.maximum === 'number' ? schema.maximum : Number.MAX_SAFE_INTEGER;
  const edges = [min, max, 0, 1, -1, 2, 1e9, 2 ** 31, 2 ** 32, Number.MAX_SAFE_INTEGER, 1e300].filter(
    (n) => n >= min && n <= max,
  );
  const ranged = integer
    ? fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31) })
    : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
  return fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...edges) }, { weight: 1, arbitrary: ranged });
};

/** Any JSON value, with deep nesting and wide arrays among the shapes. */
export const hostileJson: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 6 }) as fc.Arbitrary<Json> },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(10, 100, 1000, 5000), fc.boolean())
      .map(([depth, asObject]) => nest(depth, 'deep', asObject)),
  },
  { weight: 1, arbitrary: fc.constantFrom<Json>(Array(50_000).fill(0), Array(20_000).fill('x')) },
);

/** Schema-valid hostile values for one JSON Schema node; `key` is the property it sits under. */
export const arbitraryFor = (schema: JsonSchema, key = ''): fc.Arbitrary<unknown> => {
  if (Array.isArray(schema.anyOf))
    return fc.oneof(...(schema.anyOf as JsonSchema[]).map((s) => arbitraryFor(s, key)));
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  switch (schema.type) {
    case 'string':
      return stringArb(schema, key);
    case 'integer':
      return numberArb(schema, true);
    case 'number':
      return numberArb(schema, false);
    case 'boolean':
      return fc.boolean();
    case 'array': {
      const items = (schema.items as JsonSchema | undefined) ?? {};
      const minLength = typeof schema.minItems === 'number' ? schema.minItems : 0;
      const maxLength = typeof schema.maxItems === 'number' ? schema.maxItems : minLength + 8;
      return fc.array(arbitraryFor(items, key), { minLength, maxLength });
    }
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      const required = new Set((schema.required as string[] | undefined) ?? []);
      const keys = Object.keys(properties);
      if (keys.length === 0) {
        const extra = schema.additionalProperties;
        if (typeof extra === 'object' && extra !== null)
          return fc.dictionary(stringArb({ type: 'string' }, ''), arbitraryFor(extra as JsonSchema), {
            maxKeys: 6,
          });
        return fc.constant({});
      }
      const model = Object.fromEntries(keys.map((k) => [k, arbitraryFor(properties[k] as JsonSchema, k)]));
      return fc.record(model, { requiredKeys: keys.filter((k) => required.has(k)) });
    }
    default:
      return hostileJson;
  }
};

/** A call's arguments for logs and failure messages: long strings shortened, depth cut. */
export const summarize = (value: unknown, depth = 0): unknown => {
  if (typeof value === 'string')
    return value.length > 60 ? `${value.slice(0, 60)}…(${value.length} chars)` : value;
  if (depth > 3) return '…';
  if (Array.isArray(value))
    return value.length > 5
      ? [...value.slice(0, 5).map((v) => summarize(v, depth + 1)), `…(${value.length} items)`]
      : value.map((v) => summarize(v, depth + 1));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, summarize(v, depth + 1)]));
  return value;
};
