// generateSdk behaviour beyond the golden files: per-tool fallback, options, edge shapes.
import { describe, expect, it } from 'vitest';
import { generateSdk, SDK_BANNER } from '../../../sdk-gen/index.ts';
import { MAX_SUBSCHEMAS } from '../../../sdk-gen/schema-to-ts.ts';

const object = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
});

describe('generateSdk', () => {
  it('declares an empty tools object for no tools', () => {
    expect(generateSdk([]).declarations).toBe(`${SDK_BANNER}\n\ndeclare const tools: {};\n`);
  });

  it('falls back to unknown for one tool only, reports it, and frees its type names', () => {
    const throwing = {
      type: 'object',
      properties: { a: { $ref: '#/$defs/Node' } },
      get $defs(): never {
        throw new Error('hostile getter');
      },
    };
    const huge = object(
      Object.fromEntries(Array.from({ length: MAX_SUBSCHEMAS + 1 }, (_, i) => [`p${i}`, { type: 'string' }])),
    );
    const sdk = generateSdk([
      { name: 'bad', description: 'Bad.', parameters: throwing },
      { name: 'big', description: 'Big.', parameters: huge, output: throwing },
      { name: 'good', description: 'Good.', parameters: object({ a: { type: 'string' } }, ['a']) },
    ]);
    expect(sdk.diagnostics).toEqual([
      { tool: 'bad', part: 'parameters', message: 'Error: hostile getter' },
      {
        tool: 'big',
        part: 'parameters',
        message: `Error: schema has more than ${MAX_SUBSCHEMAS} subschemas`,
      },
      { tool: 'big', part: 'output', message: 'Error: hostile getter' },
    ]);
    expect(sdk.declarations).toContain('  bad(args: unknown): Promise<unknown>;\n');
    expect(sdk.declarations).toContain('  big(args: unknown): Promise<unknown>;\n');
    expect(sdk.declarations).toContain('  good(args: GoodInput): Promise<unknown>;\n');
    expect(sdk.declarations).not.toContain('BadInput');
  });

  it('omits @param lines with paramTags: false', () => {
    const tools = [
      { name: 't', description: 'Do it.', parameters: object({ a: { type: 'string', description: 'A.' } }) },
    ];
    expect(generateSdk(tools).declarations).toContain('   * @param args.a - A.\n');
    const sdk = generateSdk(tools, { paramTags: false }).declarations;
    expect(sdk).not.toContain('@param');
    expect(sdk).toContain('  /** Do it. */\n  t(args?: TInput): Promise<unknown>;\n');
  });

  it('honours maxDepth', () => {
    const tools = [
      { name: 't', description: '', parameters: object({ a: object({ b: { type: 'string' } }, ['b']) }) },
    ];
    expect(generateSdk(tools, { maxDepth: 1 }).declarations).toContain('  a?: {\n    b: unknown;\n  };\n');
    expect(generateSdk(tools, { maxDepth: 2 }).declarations).toContain('  a?: {\n    b: string;\n  };\n');
  });

  it('names object-shaped outputs and inlines the rest', () => {
    const sdk = generateSdk([
      { name: 'a', description: '', parameters: {}, output: { type: 'array', items: { type: 'string' } } },
      { name: 'b', description: '', parameters: {}, output: { type: ['string', 'null'] } },
      { name: 'c', description: '', parameters: {}, output: object({ ok: { type: 'boolean' } }, ['ok']) },
    ]).declarations;
    expect(sdk).toContain('  a(args: unknown): Promise<string[]>;\n');
    expect(sdk).toContain('  b(args: unknown): Promise<string | null>;\n');
    expect(sdk).toContain('interface COutput {\n  ok: boolean;\n}\n');
    expect(sdk).toContain('  c(args: unknown): Promise<COutput>;\n');
  });

  it('makes args optional only when no property is required', () => {
    const sdk = generateSdk([
      { name: 'none', description: '', parameters: object({}) },
      { name: 'some', description: '', parameters: object({ a: { type: 'string' } }, ['a']) },
    ]).declarations;
    expect(sdk).toContain('  none(args?: NoneInput)');
    expect(sdk).toContain('  some(args: SomeInput)');
  });

  it('emits only the named types that the output refers to', () => {
    const sdk = generateSdk([
      {
        name: 't',
        description: '',
        parameters: {
          anyOf: [{}, { $ref: '#/$defs/A' }],
          $defs: { A: { type: 'object', properties: { self: { $ref: '#' } } } },
        },
      },
    ]).declarations;
    expect(sdk).toBe(`${SDK_BANNER}\n\ndeclare const tools: {\n  t(args: unknown): Promise<unknown>;\n};\n`);
  });
});
