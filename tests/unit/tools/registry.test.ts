import { describe, expect, it } from 'vitest';
import { createRegistry, RESERVED_NAME } from '../../../host/tools/index.ts';
import { agent, call, echoTool } from './helpers.ts';

const names = (list: { name: string }[]) => list.map((d) => d.name);

describe('registry layers', () => {
  it('a duplicate name inside one layer fails', () => {
    const registry = createRegistry();
    registry.global.register(echoTool('read'));
    expect(() => registry.global.register(echoTool('read'))).toThrow(
      expect.objectContaining({ code: 'DUPLICATE_TOOL' }),
    );
  });

  it('a nearer layer shadows an inherited name', async () => {
    const registry = createRegistry();
    registry.global.register(echoTool('read', { description: 'global read' }));
    const preset = registry.scope('preset:code');
    preset.register(echoTool('read', { description: 'preset read' }));
    const agentScope = preset.child('agent:1');
    expect(agentScope.get('read')?.description).toBe('preset read');
    expect(registry.global.get('read')?.description).toBe('global read');
    expect(names(agentScope.schemas())).toEqual(['read']);
  });

  it('a child never changes its parent: registrations in a child are invisible above it', () => {
    const registry = createRegistry();
    const preset = registry.scope('preset:standard');
    const a = preset.child('agent:a');
    const b = preset.child('agent:b');
    a.register(echoTool('mine'));
    expect(preset.get('mine')).toBeUndefined();
    expect(b.get('mine')).toBeUndefined();
    expect(a.get('mine')).toBeDefined();
  });

  it('a parent registration made later is visible to existing children', () => {
    const registry = createRegistry();
    const a = registry.scope('preset:standard').child('agent:a');
    expect(a.get('late')).toBeUndefined();
    registry.global.register(echoTool('late'));
    expect(a.get('late')).toBeDefined();
  });

  it('registry.scope(name) returns the same preset layer every time', () => {
    const registry = createRegistry();
    expect(registry.scope('preset:x')).toBe(registry.scope('preset:x'));
  });

  it('run_code is reserved and cannot be registered or shadowed', () => {
    const registry = createRegistry();
    const scope = registry.scope('p').child('a');
    expect(() => scope.register(echoTool(RESERVED_NAME))).toThrow(
      expect.objectContaining({ code: 'RESERVED_TOOL_NAME' }),
    );
  });

  it('disposing a registration removes it, and the name can be registered again', () => {
    const registry = createRegistry();
    const dispose = registry.global.register(echoTool('tmp'));
    dispose();
    expect(registry.global.get('tmp')).toBeUndefined();
    dispose(); // idempotent
    registry.global.register(echoTool('tmp'));
    expect(registry.global.get('tmp')).toBeDefined();
  });

  it('disposing a shadowing registration uncovers the inherited one', () => {
    const registry = createRegistry();
    registry.global.register(echoTool('read', { description: 'global' }));
    const agentScope = registry.global.child('agent');
    const dispose = agentScope.register(echoTool('read', { description: 'agent' }));
    expect(agentScope.get('read')?.description).toBe('agent');
    dispose();
    expect(agentScope.get('read')?.description).toBe('global');
  });

  it('register rejects things that are not definitions', () => {
    const registry = createRegistry();
    expect(() => registry.global.register({ name: 'x' } as never)).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
  });
});

describe('restrictions', () => {
  const setup = () => {
    const registry = createRegistry();
    for (const n of ['read', 'write', 'bash', 'grep']) registry.global.register(echoTool(n));
    const preset = registry.scope('preset');
    const agentScope = preset.child('agent');
    return { registry, preset, agentScope };
  };

  it('restrict({ allow }) filters inherited tools to the allowed names', () => {
    const { agentScope } = setup();
    agentScope.restrict({ allow: ['read', 'grep'] });
    expect(names(agentScope.schemas())).toEqual(['read', 'grep']);
  });

  it('allow and deny masks intersect', () => {
    const { preset, agentScope } = setup();
    preset.restrict({ allow: ['read', 'write', 'grep'] });
    agentScope.restrict({ deny: ['write'] });
    agentScope.restrict({ allow: ['read', 'write', 'bash'] });
    expect(names(agentScope.schemas())).toEqual(['read']);
    expect(names(preset.schemas())).toEqual(['read', 'write', 'grep']);
  });

  it("a child's own registrations survive restrictions over inherited tools", () => {
    const { agentScope } = setup();
    agentScope.register(echoTool('report'));
    agentScope.restrict({ allow: ['read'] });
    expect(names(agentScope.schemas())).toEqual(['read', 'report']);
  });

  it('a restricted tool cannot be executed: UNKNOWN_TOOL', async () => {
    const { agentScope } = setup();
    agentScope.restrict({ deny: ['bash'] });
    const [r] = await agentScope.execute([call('1', 'bash', { text: 'x' })], { agent });
    expect(r?.error?.code).toBe('UNKNOWN_TOOL');
    expect(r?.content).toEqual([
      { type: 'text', text: 'Error: Unknown tool "bash"; call one of the tools listed for this agent.' },
    ]);
  });

  it('disposing a restriction lifts it', () => {
    const { agentScope } = setup();
    const lift = agentScope.restrict({ deny: ['bash'] });
    expect(names(agentScope.schemas())).not.toContain('bash');
    lift();
    expect(names(agentScope.schemas())).toContain('bash');
  });

  it('a malformed restriction fails with CONFIG_INVALID', () => {
    const { agentScope } = setup();
    expect(() => agentScope.restrict({ allow: ['a'], deny: ['b'] } as never)).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
    expect(() => agentScope.restrict({ allow: 'read' } as never)).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
  });
});
