// Remote tools arrive with the client's JSON Schema, validated in the API process. Guarantee: no
// `pattern` a tenant writes can stall the service (it runs on the linear-time engine within a
// budget), patterns keep their meaning, the model still sees the client's own schema, and schema
// features that would run a client regex by backtracking are refused with a clear 400.
import { describe, expect, it } from 'vitest';
import { makeApi } from '../api/harness.ts';

const register = (api: Awaited<ReturnType<typeof makeApi>>, agentId: string, parameters: unknown) =>
  api.request(api.keyA, 'POST', `/v1/agents/${agentId}/remote-tools`, {
    tools: [{ name: 'rt', description: 'remote', parameters, timeoutMs: 100 }],
  });

describe('remote tool schemas', () => {
  it('a catastrophic-backtracking pattern cannot stall the service, and patterns still decide', async () => {
    const api = await makeApi();
    try {
      const agent = await api.createAgent(api.keyA);
      const schema = {
        type: 'object',
        properties: {
          q: { type: 'string', pattern: '^(a+)+$' },
          tags: { type: 'array', items: { type: 'string', pattern: '^[a-z]+$', format: 'email' } },
          pattern: { type: 'string' },
        },
        required: ['q'],
      };
      const reg = await register(api, agent.id, schema);
      expect(reg.status, reg.text).toBe(200);
      // A backtracking engine would never answer this; the linear one (which the refusals in the
      // next test pin) answers at once.
      const res = await api.call(api.keyA, agent.id, [
        { id: 'slow', name: 'rt', arguments: { q: `${'a'.repeat(50_000)}!` } },
      ]);
      expect(res.json.results[0].error.code).toBe('INVALID_ARGUMENTS');
      const other = await api.createAgent(api.keyB);
      expect((await api.request(api.keyB, 'GET', `/v1/agents/${other.id}`)).status).toBe(200);
      // Matching and non-matching values behave as JSON Schema says.
      const [bad, good] = (
        await api.call(api.keyA, agent.id, [
          { id: 'bad', name: 'rt', arguments: { q: 'aab', pattern: 'x' } },
          { id: 'good', name: 'rt', arguments: { q: 'aaa', pattern: 'x' } },
        ])
      ).json.results;
      expect(bad.error.code).toBe('INVALID_ARGUMENTS');
      expect(good.error?.code).not.toBe('INVALID_ARGUMENTS');
      // The model sees the client's schema, pattern included.
      const tools = await api.request(api.keyA, 'GET', `/v1/agents/${agent.id}/tools`);
      const rt = tools.json.tools.find((x: { name: string }) => x.name === 'rt');
      expect(rt.parameters.properties.q.pattern).toBe('^(a+)+$');
      expect(JSON.stringify(rt.parameters)).not.toContain('dsh-linear');
    } finally {
      await api.close();
    }
  });

  it('patterns the linear engine cannot run, and patternProperties, are refused with a clear 400', async () => {
    const api = await makeApi();
    try {
      const agent = await api.createAgent(api.keyA);
      for (const parameters of [
        { type: 'object', properties: { q: { type: 'string', pattern: '(a)\\1' } } },
        { type: 'object', properties: { q: { type: 'string', pattern: '(?=a)' } } },
        { type: 'object', patternProperties: { '^(a+)+$': { type: 'string' } } },
        { type: 'object', properties: { q: { type: 'array', items: { pattern: 'x'.repeat(600) } } } },
      ]) {
        const res = await register(api, agent.id, parameters);
        expect(res.status, JSON.stringify(parameters)).toBe(400);
        expect(res.json.error.code).toBe('INVALID_ARGUMENTS');
      }
      expect((await api.request(api.keyA, 'GET', '/v1/agents')).status).toBe(200);
    } finally {
      await api.close();
    }
  });
});
