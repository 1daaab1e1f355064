// An agent's policies: the API's `{ ask, deny, rules }` as the list of policy specs it stands for,
// and installPolicies; host/ reaches policies/ through its door (policies/index.ts) only.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { createRegistry } from '../../../host/tools/index.ts';
import { AgentPolicy, agentPolicies, installPolicies } from '../../../policies/index.ts';
import { agent, call, echoTool } from '../tools/helpers.ts';

const setup = () => {
  const registry = createRegistry({
    approvals: { request: async () => ({ allow: false, reason: 'asked and refused' }) },
  });
  for (const n of ['bash', 'read', 'write']) registry.global.register(echoTool(n));
  return registry;
};

const codes = async (registry: ReturnType<typeof setup>) =>
  (
    await registry.global.execute(
      ['bash', 'read', 'write'].map((n, i) => call(`${i}`, n, { text: 'x' })),
      { agent },
    )
  ).map((r) => r.error?.code ?? 'ok');

describe("an agent's policies", () => {
  it('no policy, or an empty one, is no spec at all', () => {
    expect(agentPolicies(undefined)).toEqual([]);
    expect(agentPolicies({})).toEqual([]);
    expect(agentPolicies({ ask: [], deny: [], rules: [] })).toEqual([]);
  });

  it('is one rules spec: deny names first, then the rules, then ask names', async () => {
    const specs = agentPolicies({
      ask: ['write', 'bash'],
      deny: ['bash'],
      rules: [{ tool: 'write', decision: 'allow' }],
    });
    expect(specs).toHaveLength(1);
    expect(specs[0]?.type).toBe('rules');
    const registry = setup();
    installPolicies(registry.global, specs);
    // bash: deny wins over ask; write: the rule allows before ask is reached; read: no rule.
    expect(await codes(registry)).toEqual(['DENIED', 'ok', 'ok']);
  });

  it('the schema the API validates requests with takes tool names only, and nothing else', () => {
    expect(v.safeParse(AgentPolicy, { ask: ['write'], deny: ['bash'], rules: [{}] }).success).toBe(true);
    expect(v.safeParse(AgentPolicy, { deny: ['not a name'] }).success).toBe(false);
    expect(v.safeParse(AgentPolicy, { allow: ['bash'] }).success).toBe(false);
  });
});

describe('installPolicies', () => {
  it('installs specs in order and removes them all with one disposer', async () => {
    const registry = setup();
    const uninstall = installPolicies(registry.global, [
      { type: 'rules', config: { rules: [{ tool: 'read', decision: 'deny' }] } },
      { type: 'timeout', config: { defaultMs: 60_000 } },
      { type: 'rules', config: { rules: [{ tool: '*', decision: 'deny' }] } },
    ]);
    expect(await codes(registry)).toEqual(['DENIED', 'DENIED', 'DENIED']);
    uninstall();
    expect(await codes(registry)).toEqual(['ok', 'ok', 'ok']);
  });

  it('is all or nothing: one bad spec is CONFIG_INVALID and installs none', async () => {
    const registry = setup();
    for (const bad of [
      { type: 'rules', config: { rules: [{ tool: 'read', decision: 'maybe' }] } },
      { type: 'firewall' },
    ]) {
      expect(() =>
        installPolicies(registry.global, [
          { type: 'rules', config: { rules: [{ tool: '*', decision: 'deny' }] } },
          bad,
        ]),
      ).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
    }
    expect(await codes(registry)).toEqual(['ok', 'ok', 'ok']);
  });
});

describe('the door of policies/', () => {
  it('is the only module of policies/ that host/ imports', () => {
    const host = fileURLToPath(new URL('../../../host/', import.meta.url));
    const files = readdirSync(host, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    for (const file of files) {
      const source = readFileSync(`${host}${file}`, 'utf8');
      for (const [, specifier] of source.matchAll(/\bfrom\s+'([^']*\/policies\/[^']*)'/g))
        expect(specifier, `host/${file}`).toMatch(/\/policies\/index\.ts$/);
    }
  });
});
