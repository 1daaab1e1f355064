// JSON Schema keyword → TypeScript type, one keyword at a time (exact printed text).
import { describe, expect, it } from 'vitest';
import { convertSchema } from '../../../sdk-gen/schema-to-ts.ts';
import { printType } from '../../../sdk-gen/ts-type.ts';

function typeOf(schema: unknown, maxDepth = 8): string {
  const result = convertSchema(schema, { rootName: 'Root', prefix: 'T', maxDepth, allocate: (base) => base });
  return printType(result.root, '');
}

function namedOf(schema: unknown): Record<string, string> {
  const result = convertSchema(schema, {
    rootName: 'Root',
    prefix: 'T',
    maxDepth: 8,
    allocate: (base) => base,
  });
  return Object.fromEntries(result.named.map((named) => [named.name, printType(named.type, '')]));
}

describe('convertSchema', () => {
  it('maps primitive types', () => {
    expect(typeOf({ type: 'string' })).toBe('string');
    expect(typeOf({ type: 'number' })).toBe('number');
    expect(typeOf({ type: 'integer' })).toBe('number');
    expect(typeOf({ type: 'boolean' })).toBe('boolean');
    expect(typeOf({ type: 'null' })).toBe('null');
  });

  it('maps boolean schemas, empty schemas and non-schemas', () => {
    expect(typeOf(true)).toBe('unknown');
    expect(typeOf({})).toBe('unknown');
    expect(typeOf(false)).toBe('never');
    expect(typeOf(null)).toBe('unknown');
    expect(typeOf([{ type: 'string' }])).toBe('unknown');
  });

  it('maps enum and const to literal unions, const winning over enum and type', () => {
    expect(typeOf({ type: 'string', enum: ['a', 'b'] })).toBe('"a" | "b"');
    expect(typeOf({ enum: ['a', 1, false, null] })).toBe('"a" | 1 | false | null');
    expect(typeOf({ const: 'x', enum: ['y'], type: 'number' })).toBe('"x"');
    expect(typeOf({ const: { a: [1, 'b'] } })).toBe('{\n  a: [1, "b"];\n}');
    expect(typeOf({ enum: [] })).toBe('never');
    expect(typeOf({ enum: ['a', 'a'] })).toBe('"a"');
  });

  it('maps type arrays and OpenAPI nullable to unions', () => {
    expect(typeOf({ type: ['string', 'null'] })).toBe('string | null');
    expect(typeOf({ type: ['object', 'null'], properties: { a: { type: 'string' } } })).toBe(
      '{\n  a?: string;\n} | null',
    );
    expect(typeOf({ type: 'string', nullable: true })).toBe('string | null');
  });

  it('maps arrays and parenthesises composite element types', () => {
    expect(typeOf({ type: 'array', items: { type: 'string' } })).toBe('string[]');
    expect(typeOf({ type: 'array' })).toBe('unknown[]');
    expect(typeOf({ type: 'array', items: { type: ['string', 'number'] } })).toBe('(string | number)[]');
    expect(typeOf({ type: 'array', items: { type: 'array', items: { type: 'integer' } } })).toBe(
      'number[][]',
    );
  });

  it('maps tuples: prefixItems and draft-07 items arrays, minItems, rest items', () => {
    const pair = [{ type: 'number' }, { type: 'string' }];
    expect(typeOf({ type: 'array', prefixItems: pair, minItems: 2 })).toBe('[number, string]');
    expect(typeOf({ type: 'array', items: pair, minItems: 2 })).toBe('[number, string]');
    expect(typeOf({ type: 'array', prefixItems: pair, minItems: 1 })).toBe('[number, string?]');
    expect(typeOf({ type: 'array', prefixItems: pair })).toBe('[number?, string?]');
    expect(typeOf({ type: 'array', prefixItems: pair, minItems: 2, items: { type: 'boolean' } })).toBe(
      '[number, string, ...boolean[]]',
    );
    expect(typeOf({ type: 'array', items: pair, minItems: 2, additionalItems: true })).toBe(
      '[number, string, ...unknown[]]',
    );
    expect(typeOf({ type: 'array', prefixItems: pair, minItems: 2, items: false })).toBe('[number, string]');
    expect(typeOf({ type: 'array', prefixItems: [{ type: ['string', 'null'] }] })).toBe('[(string | null)?]');
  });

  it('maps objects: required, optional, quoted keys, JSDoc with defaults', () => {
    const schema = {
      type: 'object',
      properties: {
        a: { type: 'string', description: 'First.\nSecond line.' },
        'b-c': { type: 'number', default: 3 },
      },
      required: ['a', 'z'],
    };
    expect(typeOf(schema)).toBe(
      [
        '{',
        '  /**',
        '   * First.',
        '   * Second line.',
        '   */',
        '  a: string;',
        '  /** @default 3 */',
        '  "b-c"?: number;',
        '  z: unknown;',
        '}',
      ].join('\n'),
    );
  });

  it('maps additionalProperties: absent or false closed, true or a schema an index signature', () => {
    const props = { a: { type: 'string' } };
    expect(typeOf({ type: 'object', properties: props })).toBe('{\n  a?: string;\n}');
    expect(typeOf({ type: 'object', properties: props, additionalProperties: false })).toBe(
      '{\n  a?: string;\n}',
    );
    expect(typeOf({ type: 'object', properties: props, additionalProperties: true })).toBe(
      '{\n  a?: string;\n  [key: string]: unknown;\n}',
    );
    expect(typeOf({ type: 'object', additionalProperties: { type: 'number' } })).toBe(
      '{\n  [key: string]: number;\n}',
    );
    expect(typeOf({ type: 'object' })).toBe('{\n  [key: string]: unknown;\n}');
    expect(typeOf({ type: 'object', properties: {} })).toBe('{}');
    expect(typeOf({ type: 'object', patternProperties: { '^x-': { type: 'string' } } })).toBe(
      '{\n  [key: string]: string;\n}',
    );
  });

  it('widens the index signature so that every property fits it', () => {
    const schema = {
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'boolean' } },
      required: ['b'],
      additionalProperties: { type: 'number' },
    };
    expect(typeOf(schema)).toBe(
      '{\n  a?: string;\n  b: boolean;\n  [key: string]: number | string | boolean | undefined;\n}',
    );
  });

  it('infers object and array from their keywords when type is absent', () => {
    expect(typeOf({ properties: { a: { type: 'string' } } })).toBe('{\n  a?: string;\n}');
    expect(typeOf({ items: { type: 'string' } })).toBe('string[]');
  });

  it('maps anyOf and oneOf to unions, allOf to intersections', () => {
    expect(typeOf({ anyOf: [{ type: 'string' }, { type: 'number' }] })).toBe('string | number');
    expect(typeOf({ oneOf: [{ const: 'a' }, { const: 'b' }] })).toBe('"a" | "b"');
    expect(typeOf({ anyOf: [{ type: 'string' }, {}] })).toBe('unknown');
    expect(
      typeOf({
        allOf: [
          { type: 'object', properties: { a: { type: 'string' } } },
          { anyOf: [{ type: 'object', properties: { b: { type: 'number' } } }, { type: 'null' }] },
        ],
      }),
    ).toBe('{\n  a?: string;\n} & ({\n  b?: number;\n} | null)');
    expect(typeOf({ type: 'string', allOf: [{ minLength: 1 }] })).toBe('string');
  });

  it('ignores format, narrowing-only and unknown keywords', () => {
    expect(
      typeOf({ type: 'string', format: 'date-time', minLength: 1, 'x-vendor': 1, not: { const: '' } }),
    ).toBe('string');
    // Built with JSON.parse: a literal `then` key makes an object look like a promise.
    expect(typeOf(JSON.parse('{"type":"string","if":{"const":"a"},"then":false}'))).toBe('string');
  });

  it('caps nesting depth: deeper subschemas become unknown', () => {
    const nested = {
      type: 'array',
      items: { type: 'array', items: { type: 'array', items: { type: 'string' } } },
    };
    expect(typeOf(nested, 3)).toBe('string[][][]');
    expect(typeOf(nested, 2)).toBe('unknown[][][]');
    expect(typeOf(nested, 0)).toBe('unknown[]');
  });

  it('turns local $refs into named types, once each, with cycles by name', () => {
    const schema = {
      type: 'object',
      properties: {
        a: { $ref: '#/$defs/Node' },
        b: { $ref: '#/definitions/Leaf' },
        c: { $ref: '#/$defs/Node' },
      },
      $defs: { Node: { type: 'object', properties: { next: { $ref: '#/$defs/Node' } } } },
      definitions: { Leaf: { type: 'string' } },
    };
    expect(typeOf(schema)).toBe('{\n  a?: TNode;\n  b?: TLeaf;\n  c?: TNode;\n}');
    expect(namedOf(schema)).toEqual({ TNode: '{\n  next?: TNode;\n}', TLeaf: 'string' });
  });

  it('never lets a named type contain itself outside a property or element', () => {
    const schema = {
      $ref: '#/$defs/A',
      $defs: { A: { anyOf: [{ $ref: '#/$defs/A' }, { type: 'string' }] } },
    };
    expect(typeOf(schema)).toBe('TA');
    expect(namedOf(schema)).toEqual({ TA: 'unknown' });
    expect(typeOf({ anyOf: [{ $ref: '#' }, { type: 'string' }] })).toBe('unknown');
    expect(typeOf({ type: 'array', items: { $ref: '#' } })).toBe('Root[]');
  });

  it('never follows non-local references', () => {
    for (const ref of [
      'file:///etc/passwd',
      'https://example.com/s.json',
      'other.json#/$defs/A',
      '#/properties/a',
      '#x',
    ]) {
      expect(typeOf({ $ref: ref, $defs: { A: { type: 'string' } } })).toBe('unknown');
    }
    expect(typeOf({ $ref: '#/$defs/Missing' })).toBe('unknown');
    expect(typeOf({ $ref: '#/$defs/%E0%A4%A' })).toBe('unknown');
  });

  it('decodes JSON Pointer escapes in references', () => {
    const schema = { $ref: '#/$defs/a~1b~0c', $defs: { 'a/b~c': { type: 'boolean' } } };
    expect(namedOf(schema)).toEqual({ TABC: 'boolean' });
  });

  it('reads only own properties (a schema cannot smuggle in Object.prototype)', () => {
    const schema = {
      type: 'object',
      properties: { constructor: { type: 'string' } },
      required: ['constructor'],
    };
    expect(typeOf(schema)).toBe('{\n  constructor: string;\n}');
    expect(typeOf({ $ref: '#/$defs/constructor', $defs: {} })).toBe('unknown');
  });
});
