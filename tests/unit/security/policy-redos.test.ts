// A tenant writes the regular expressions of its own policy rules, and they run on the API
// process's single event loop. Guarantee: no pattern, glob or argument can stall that loop (which
// would stall every other tenant), and a condition too costly to decide fails closed.
import { describe, expect, it } from 'vitest';
import { createRegistry } from '../../../host/tools/index.ts';
import { globToRegExp, rulesPolicy } from '../../../policies/index.ts';
import { makeApi } from '../api/harness.ts';
import { agent, call, echoTool } from '../tools/helpers.ts';

const setup = () => {
  const registry = createRegistry({
    approvals: { request: async () => ({ allow: false, reason: 'asked and refused' }) },
  });
  for (const n of ['bash', 'write']) registry.global.register(echoTool(n));
  return registry;
};

describe('tenant-written policy patterns', () => {
  it('a catastrophic-backtracking condition cannot stall the service for another tenant', async () => {
    const api = await makeApi();
    try {
      const created = await api.request(api.keyA, 'POST', '/v1/agents', {
        policy: { rules: [{ tool: 'write', when: { file_path: '^(a+)+$' }, decision: 'deny' }] },
      });
      expect(created.status).toBe(201);
      // A backtracking engine would take 2^5000 steps here and never answer; the linear one (which
      // the refusals in the next test pin) answers at once. What it costs: bench/tools-pipeline.ts.
      const res = await api.call(api.keyA, created.json.id, [
        { id: 'x', name: 'write', arguments: { file_path: `${'a'.repeat(5000)}!`, content: 'x' } },
      ]);
      expect(res.status).toBe(200);
      const b = await api.createAgent(api.keyB);
      expect((await api.request(api.keyB, 'GET', `/v1/agents/${b.id}`)).status).toBe(200);
    } finally {
      await api.close();
    }
  });

  it('patterns that need backtracking are refused at agent creation with a clear 400', async () => {
    const api = await makeApi();
    try {
      for (const pattern of ['(a)\\1', '(?=a)b', 'a{1,5000}', 'x'.repeat(600)]) {
        const res = await api.request(api.keyA, 'POST', '/v1/agents', {
          policy: { rules: [{ tool: 'bash', when: { command: pattern }, decision: 'deny' }] },
        });
        expect(res.status, pattern).toBe(400);
        expect(res.json.error.code).toMatch(/INVALID_ARGUMENTS|BAD_REQUEST/);
        expect(res.json.error.message).not.toMatch(/\/work\/|node_modules|at .*\.ts/);
      }
      expect((await api.request(api.keyA, 'GET', '/v1/agents')).status).toBe(200);
    } finally {
      await api.close();
    }
  });

  it('a glob full of stars matches in linear time', () => {
    const re = globToRegExp(`${'*a'.repeat(200)}b`);
    expect(re.flags).toContain('l'); // compiled for V8's linear-time engine
    expect(re.test('a'.repeat(256))).toBe(false);
    expect(globToRegExp('a**b').test('axxb')).toBe(true);
    expect(globToRegExp('job_?').test('job_12')).toBe(false);
  });

  it('a condition too costly to decide fails closed: deny still denies, allow does not allow', async () => {
    const registry = setup();
    rulesPolicy({
      rules: [
        { tool: 'bash', when: { text: 'rm' }, decision: 'deny', reason: 'no rm' },
        { tool: 'write', when: { text: `(?:${'a|'.repeat(200)}b)*c` }, decision: 'allow' },
        { tool: 'write', decision: 'deny', reason: 'fallback deny' },
      ],
    }).install(registry.global);
    const huge = 'x'.repeat(20_000_000);
    const [bash, write] = await registry.global.execute(
      [call('1', 'bash', { text: huge }), call('2', 'write', { text: 'a'.repeat(30_000) })],
      { agent },
    );
    // Decided without matching: 'rm' is not in the value, so a match would have allowed bash.
    expect(bash?.error?.code).toBe('DENIED');
    expect(write?.error?.message).toBe('fallback deny');
    // Cheap conditions still decide normally.
    const [ls] = await registry.global.execute([call('3', 'bash', { text: 'ls' })], { agent });
    expect(ls?.ok).toBe(true);
  });
});
