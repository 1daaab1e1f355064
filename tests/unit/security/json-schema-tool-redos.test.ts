// Every JSON-Schema tool (remote, plugin, MCP), not only remote tools, validates `pattern` on the
// linear-time engine: a backtracking pattern cannot stall the API's event loop.
import { describe, expect, it } from 'vitest';
import { defineJsonSchemaTool } from '../../../host/tools/index.ts';

const tool = (parameters: Record<string, unknown>) =>
  defineJsonSchemaTool({
    name: 'plugin_tool',
    description: 'A plugin tool.',
    parameters,
    execute: () => null,
  });

describe('JSON-Schema tools and regular expressions', () => {
  it('a catastrophic pattern is decided at once and still validates', () => {
    const t = tool({ type: 'object', properties: { id: { type: 'string', pattern: '^(a+)+$' } } });
    // On the backtracking engine this would run for hours and the test would time out.
    expect(t.validateArguments({ id: `${'a'.repeat(40)}!` }).ok).toBe(false);
    expect(t.validateArguments({ id: 'aaaa' }).ok).toBe(true);
  });

  it('the model still sees the original pattern', () => {
    const t = tool({ type: 'object', properties: { id: { type: 'string', pattern: '^[a-z]+$' } } });
    expect(t.parameters).toMatchObject({ properties: { id: { pattern: '^[a-z]+$' } } });
  });

  it('a pattern the linear engine cannot run, and patternProperties, are refused at definition', () => {
    expect(() =>
      tool({ type: 'object', properties: { id: { type: 'string', pattern: '(a)\\1' } } }),
    ).toThrow();
    expect(() => tool({ type: 'object', patternProperties: { '^x': { type: 'string' } } })).toThrow();
  });
});
