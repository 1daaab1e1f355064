// Remote and plugin tools arrive with an outside JSON Schema, validated on the API's one event loop.
// Guarantee: no schema shape makes one call's validation unbounded. `$ref`s that double at every
// level (2^n node visits), a `$ref` cycle (stack overflow), a `$ref` to nothing, an `enum` compared
// against a long array, `uniqueItems` over a long array (quadratic, an error object per pair): each
// call is answered INVALID_ARGUMENTS or runs, never a 500 or a frozen loop, and another tenant's
// request is answered meanwhile. An ordinary recursive schema still validates.
import { describe, expect, it } from 'vitest';
import { defineJsonSchemaTool } from '../../../host/tools/json-schema-tool.ts';
import { makeApi } from '../api/harness.ts';

/** d0 → allOf [d1, d1] → … → d(n): 2^n visits of the root value. */
const doubling = (levels: number) => {
  const defs: Record<string, unknown> = { [`d${levels}`]: { type: 'object' } };
  for (let i = 0; i < levels; i++)
    defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  return { type: 'object', $ref: '#/$defs/d0', $defs: defs };
};

const tool = (parameters: Record<string, unknown>) =>
  defineJsonSchemaTool({ name: 't', description: 't', parameters, execute: () => null });

describe('outside schema shapes', () => {
  it('doubling refs, ref cycles, refs to nothing, long enums and uniqueItems are bounded and refused', () => {
    const cases: [Record<string, unknown>, unknown][] = [
      [doubling(40), {}],
      [{ type: 'object', $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/a' } } }, {}],
      [{ type: 'object', properties: { a: { $ref: '#/nope' } } }, { a: 1 }],
      [
        {
          type: 'object',
          properties: { a: { items: { enum: Array.from({ length: 40_000 }, (_, i) => i) } } },
        },
        { a: Array.from({ length: 50_000 }, () => -1) },
      ],
    ];
    for (const [schema, args] of cases) {
      const result = tool(schema).validateArguments(args);
      expect(result.ok).toBe(false);
    }
    // uniqueItems is not enforced (the model still sees it): 200 000 duplicates validate at once.
    const unique = tool({ type: 'object', properties: { a: { type: 'array', uniqueItems: true } } });
    expect(unique.validateArguments({ a: new Array(200_000).fill(0) }).ok).toBe(true);
    expect(unique.parameters).toMatchObject({ properties: { a: { uniqueItems: true } } });
  });

  it('an ordinary recursive schema and its own keywords still decide', () => {
    const tree = tool({
      type: 'object',
      properties: { node: { $ref: '#/$defs/node' } },
      $defs: {
        node: {
          type: 'object',
          properties: {
            name: { enum: ['a', 'b'] },
            kids: { type: 'array', items: { $ref: '#/$defs/node' }, minContains: 0 },
          },
          required: ['name'],
        },
      },
    });
    const deep = { node: { name: 'a', kids: [{ name: 'b', kids: [{ name: 'a' }] }] } };
    expect(tree.validateArguments(deep).ok).toBe(true);
    expect(tree.validateArguments({ node: { name: 'a', kids: [{ name: 'c' }] } }).ok).toBe(false);
    expect(JSON.stringify(tree.parameters)).toContain('"minContains":0');
  });

  it('over the API: a hostile remote tool schema answers INVALID_ARGUMENTS, and other tenants are served', async () => {
    const api = await makeApi();
    try {
      const agent = await api.createAgent(api.keyA);
      const schemas = [
        doubling(22),
        { type: 'object', $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/a' } } },
        { type: 'object', properties: { a: { $ref: '#/nope' } } },
      ];
      const reg = await api.request(api.keyA, 'POST', `/v1/agents/${agent.id}/remote-tools`, {
        tools: schemas.map((parameters, i) => ({
          name: `rt${i}`,
          description: 'remote',
          parameters,
          timeoutMs: 100,
        })),
      });
      expect(reg.status, reg.text).toBe(200);
      const res = await api.call(
        api.keyA,
        agent.id,
        schemas.map((_, i) => ({ id: `c${i}`, name: `rt${i}`, arguments: { a: 1 } })),
      );
      expect(res.status, res.text).toBe(200);
      expect(res.json.results.map((r: { error?: { code: string } }) => r.error?.code)).toEqual(
        schemas.map(() => 'INVALID_ARGUMENTS'),
      );
      const other = await api.createAgent(api.keyB);
      expect((await api.request(api.keyB, 'GET', `/v1/agents/${other.id}`)).status).toBe(200);
    } finally {
      await api.close();
    }
  });
});
