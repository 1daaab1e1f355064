import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { createRegistry, defineTool } from '../../../host/tools/index.ts';
import { globToRegExp, policyFromConfig, rulesPolicy } from '../../../policies/index.ts';
import { agent, call, echoTool } from '../tools/helpers.ts';

const setup = () => {
  const registry = createRegistry({
    approvals: { request: async () => ({ allow: false, reason: 'asked and refused' }) },
  });
  for (const n of ['bash', 'read', 'read_image', 'write']) registry.global.register(echoTool(n));
  return registry;
};

describe('rulesPolicy', () => {
  it('the first matching rule wins', async () => {
    const registry = setup();
    rulesPolicy({
      rules: [
        { tool: 'read*', decision: 'allow' },
        { tool: '*', decision: 'deny', reason: 'only reads are allowed' },
      ],
    }).install(registry.global);
    const results = await registry.global.execute(
      ['read', 'read_image', 'bash'].map((n, i) => call(`${i}`, n, { text: 'x' })),
      { agent },
    );
    expect(results.map((r) => r.ok)).toEqual([true, true, false]);
    expect(results[2]?.content).toEqual([{ type: 'text', text: 'Error: only reads are allowed' }]);
  });

  it('argument conditions match by dotted path and regex', async () => {
    const registry = setup();
    rulesPolicy({
      rules: [{ tool: 'bash', when: { text: '^rm\\s' }, decision: 'deny', reason: 'no rm' }],
    }).install(registry.global);
    const [rm, ls] = await registry.global.execute(
      [call('1', 'bash', { text: 'rm -rf /' }), call('2', 'bash', { text: 'ls' })],
      { agent },
    );
    expect(rm?.error?.message).toBe('no rm');
    expect(ls?.ok).toBe(true);
  });

  it('ask rules go to the approver', async () => {
    const registry = setup();
    rulesPolicy({ rules: [{ tool: 'write', decision: 'ask', reason: 'writes need review' }] }).install(
      registry.global,
    );
    const [r] = await registry.global.execute([call('1', 'write', { text: 'x' })], { agent });
    expect(r?.error).toEqual({ code: 'DENIED', message: 'Tool write was not approved: asked and refused' });
  });

  it('no matching rule keeps the earlier decision', async () => {
    const registry = setup();
    registry.global.on('tools/pre-execute', () => ({ kind: 'deny', reason: 'earlier' }));
    rulesPolicy({ rules: [{ tool: 'nothing', decision: 'allow' }] }).install(registry.global);
    const [r] = await registry.global.execute([call('1', 'read', { text: 'x' })], { agent });
    expect(r?.error?.message).toBe('earlier');
  });

  it('config is JSON-serialisable and round-trips through policyFromConfig', async () => {
    const policy = rulesPolicy({ rules: [{ tool: 'bash', decision: 'deny' }] });
    const again = policyFromConfig(JSON.parse(JSON.stringify({ type: 'rules', config: policy.config })));
    const registry = setup();
    again.install(registry.global);
    const [r] = await registry.global.execute([call('1', 'bash', { text: 'x' })], { agent });
    expect(r?.error?.code).toBe('DENIED');
  });

  it('invalid config fails at install time with CONFIG_INVALID', () => {
    expect(() => rulesPolicy({ rules: [{ tool: 'x', decision: 'maybe' }] } as never)).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
    expect(() => rulesPolicy({ rules: [{ tool: 'x', when: { a: '(' }, decision: 'deny' }] })).toThrow(
      /not a valid regular expression/,
    );
    expect(() => policyFromConfig({ type: 'firewall' })).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
  });

  it('disposing an installed policy removes it', async () => {
    const registry = setup();
    const uninstall = rulesPolicy({ rules: [{ tool: '*', decision: 'deny' }] }).install(registry.global);
    uninstall();
    const [r] = await registry.global.execute([call('1', 'read', { text: 'x' })], { agent });
    expect(r?.ok).toBe(true);
  });

  it('globs treat * and ? as wildcards and everything else literally', () => {
    expect(globToRegExp('mcp.*').test('mcp.x')).toBe(true);
    expect(globToRegExp('mcp.*').test('mcpAx')).toBe(false);
    expect(globToRegExp('job_?').test('job_1')).toBe(true);
    expect(globToRegExp('job_?').test('job_12')).toBe(false);
  });
});

// Issue 11: a deny rule written for a string argument must also catch the same string inside an
// array or object, where a tool that accepts either would still act on it.
describe('rulesPolicy conditions on arrays and objects', () => {
  const fetchTool = defineTool({
    name: 'fetch',
    description: 'Fetches one URL or several.',
    parameters: v.object({ url: v.unknown() }),
    output: { schema: v.string() },
    execute: () => 'fetched',
  });
  const setupFetch = (rules: Parameters<typeof rulesPolicy>[0]['rules']) => {
    const registry = createRegistry();
    registry.global.register(fetchTool);
    rulesPolicy({ rules }).install(registry.global);
    return async (url: unknown) => {
      const [r] = await registry.global.execute([call('1', 'fetch', { url })], { agent });
      return r?.ok ? 'allowed' : r?.error?.code;
    };
  };
  const INTERNAL = 'http://internal.example/x';

  it('a deny rule matches the denied string wherever it sits inside the argument', async () => {
    const fetch = setupFetch([
      { tool: 'fetch', when: { url: '^http://internal\\.example/' }, decision: 'deny' },
    ]);
    expect(await fetch(INTERNAL)).toBe('DENIED');
    expect(await fetch([INTERNAL])).toBe('DENIED');
    expect(await fetch(['https://ok.example/', INTERNAL])).toBe('DENIED');
    expect(await fetch({ primary: { list: [INTERNAL] } })).toBe('DENIED');
    expect(await fetch({ [INTERNAL]: true })).toBe('DENIED');
    expect(await fetch(['https://ok.example/', { u: 'https://ok.example/b' }])).toBe('allowed');
    expect(await fetch([])).toBe('allowed');
  });

  it('an allow rule needs every string inside the argument to match', async () => {
    const fetch = setupFetch([
      { tool: 'fetch', when: { url: '^https://ok\\.example/' }, decision: 'allow' },
      { tool: 'fetch', decision: 'deny', reason: 'only ok.example' },
    ]);
    expect(await fetch(['https://ok.example/a', 'https://ok.example/b'])).toBe('allowed');
    expect(await fetch(['https://ok.example/a', INTERNAL])).toBe('DENIED');
    expect(await fetch({ a: 'https://ok.example/a', [INTERNAL]: 1 })).toBe('DENIED');
  });

  it('a value too big to inspect fails closed: deny and ask hold, allow does not', async () => {
    const many = Array.from({ length: 150_000 }, () => 'https://ok.example/');
    const deny = setupFetch([
      { tool: 'fetch', when: { url: '^http://internal\\.example/' }, decision: 'deny' },
    ]);
    expect(await deny(many)).toBe('DENIED');
    const allow = setupFetch([
      { tool: 'fetch', when: { url: '^https://ok\\.example/' }, decision: 'allow' },
      { tool: 'fetch', decision: 'deny' },
    ]);
    expect(await allow(many)).toBe('DENIED');
  });
});
