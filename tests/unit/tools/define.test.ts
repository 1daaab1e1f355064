import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { createRegistry, defineJsonSchemaTool, defineTool } from '../../../host/tools/index.ts';
import { agent, call } from './helpers.ts';

describe('defineTool', () => {
  it('the model sees name, description and the JSON Schema of the valibot parameters, nothing else', () => {
    const tool = defineTool({
      name: 'read',
      description: 'Read a file.',
      parameters: v.object({
        path: v.pipe(v.string(), v.description('Absolute path')),
        limit: v.optional(v.number()),
      }),
      output: { schema: v.string() },
      execute: () => '',
      timeoutMs: 1000,
    });
    const registry = createRegistry();
    registry.global.register(tool);
    expect(registry.schemas(registry.global)).toEqual([
      {
        name: 'read',
        description: 'Read a file.',
        parameters: {
          type: 'object',
          properties: { path: { type: 'string', description: 'Absolute path' }, limit: { type: 'number' } },
          required: ['path'],
          additionalProperties: false,
        },
      },
    ]);
  });

  it('invalid definitions fail at definition time with CONFIG_INVALID', () => {
    const base = { description: 'd', output: { schema: v.string() }, execute: () => '' };
    expect(() => defineTool({ ...base, name: 'bad name', parameters: v.object({}) })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
    expect(() => defineTool({ ...base, name: 'ok', parameters: v.string() as never })).toThrow(
      /object schema/,
    );
    expect(() => defineTool({ ...base, name: 'ok', parameters: v.object({}), timeoutMs: -1 })).toThrow(
      /timeoutMs/,
    );
  });

  it('a string value renders as text and other JSON as pretty-printed JSON', async () => {
    const registry = createRegistry();
    registry.global.register(
      defineTool({
        name: 's',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.string() },
        execute: () => 'plain',
      }),
    );
    registry.global.register(
      defineTool({
        name: 'j',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.object({ a: v.number() }) },
        execute: () => ({ a: 1 }),
      }),
    );
    const [s, j] = await registry.global.execute([call('1', 's'), call('2', 'j')], { agent });
    expect(s?.content).toEqual([{ type: 'text', text: 'plain' }]);
    expect(j?.content).toEqual([{ type: 'text', text: '{\n  "a": 1\n}' }]);
    expect(j?.value).toEqual({ a: 1 });
  });

  it('a custom renderer can return images', async () => {
    const registry = createRegistry();
    registry.global.register(
      defineTool({
        name: 'img',
        description: 'd',
        parameters: v.object({}),
        output: {
          schema: v.object({ b64: v.string() }),
          render: (_a, value) => [{ type: 'image', data: value.b64, mimeType: 'image/png' }],
        },
        execute: () => ({ b64: 'AAAA' }),
      }),
    );
    const [r] = await registry.global.execute([call('1', 'img')], { agent });
    expect(r?.content).toEqual([{ type: 'image', data: 'AAAA', mimeType: 'image/png' }]);
  });

  it('a body returning a value outside its output schema fails as TOOL_FAILED', async () => {
    const registry = createRegistry();
    registry.global.register(
      defineTool({
        name: 'n',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.number() },
        execute: () => 'x' as unknown as number,
      }),
    );
    const [r] = await registry.global.execute([call('1', 'n')], { agent });
    expect(r?.error?.code).toBe('TOOL_FAILED');
    expect(r?.content[0]).toEqual({
      type: 'text',
      text: expect.stringMatching(/^Error: Tool n returned output that does not match/),
    });
  });

  it('arguments reach the body parsed by valibot (defaults applied) and frozen', async () => {
    const registry = createRegistry();
    let seen: unknown;
    registry.global.register(
      defineTool({
        name: 'p',
        description: 'd',
        parameters: v.object({ n: v.optional(v.number(), 5), o: v.object({ k: v.string() }) }),
        output: { schema: v.null() },
        execute: (args) => {
          seen = args;
          return null;
        },
      }),
    );
    await registry.global.execute([call('1', 'p', { o: { k: 'x' } })], { agent });
    expect(seen).toEqual({ n: 5, o: { k: 'x' } });
    expect(Object.isFrozen(seen) && Object.isFrozen((seen as { o: object }).o)).toBe(true);
  });
});

describe('defineJsonSchemaTool', () => {
  const remote = () =>
    defineJsonSchemaTool({
      name: 'remote',
      description: 'A remote tool',
      parameters: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'array', items: { type: 'integer' } } },
        required: ['city'],
        'x-vendor': true,
      },
      output: { schema: { type: 'object', properties: { temp: { type: 'number' } }, required: ['temp'] } },
      execute: (args) => ({ temp: args.city === 'Oslo' ? 3 : 'warm' }),
    });

  it('raw JSON Schema arguments are validated by a real validator, with paths in the message', async () => {
    const registry = createRegistry();
    registry.global.register(remote());
    const [r] = await registry.global.execute([call('1', 'remote', { days: [1, 'x'] })], { agent });
    expect(r?.error?.code).toBe('INVALID_ARGUMENTS');
    expect(r?.error?.message).toContain('(root): Instance does not have required property "city"');
    expect(r?.error?.message).toContain('days.1: Instance type "string" is invalid');
  });

  it('valid calls run and outputs are checked against the output schema', async () => {
    const registry = createRegistry();
    registry.global.register(remote());
    const [ok, bad] = await registry.global.execute(
      [call('1', 'remote', { city: 'Oslo' }), call('2', 'remote', { city: 'Rome' })],
      { agent },
    );
    expect(ok?.value).toEqual({ temp: 3 });
    expect(bad?.error?.code).toBe('TOOL_FAILED');
  });

  it('drafts are detected from $schema and non-object roots are rejected', () => {
    expect(() =>
      defineJsonSchemaTool({
        name: 'x',
        description: 'd',
        parameters: { type: 'string' },
        execute: () => null,
      }),
    ).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    const draft7 = defineJsonSchemaTool({
      name: 'd7',
      description: 'd',
      execute: () => null,
      parameters: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: { a: { type: 'string' } },
        additionalProperties: false,
      },
    });
    expect(draft7.validateArguments({ a: 'x', b: 1 }).ok).toBe(false);
    expect(draft7.parameters.$schema).toBeUndefined();
  });
});
