import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { classify, naming, type Owner, sweepable } from '../../../host/sandbox/docker/ownership.ts';

const listed = (name: string, labels: Record<string, string>, id = name, source = `/ws/${name}-ws`) =>
  ({
    Id: id,
    Names: [`/${name}`],
    Labels: { 'dsh.managed': '1', ...labels },
    Mounts: [{ Type: 'bind', Source: source, Destination: '/workspace' }],
  }) as unknown as Docker.ContainerInfo;

const self: Owner = {
  prefix: 'dsh',
  instance: 'aaaa11112222',
  process: 'proc-now',
  claim: new Set(['legacy-claimed', 'assigned-id']),
  assigned: new Map([['assigned-id', 'agent-z']]),
  owns: (m) => m.source.startsWith('/ws/'),
};
const mine = { 'dsh.instance': 'aaaa11112222' };
const theirs = { 'dsh.instance': 'bbbb33334444' };

describe('what an instance owns on a shared engine', () => {
  it('adopts its own agents and removes only its own previous process pool leftovers', () => {
    expect(classify(listed('dsh-aaaa11112222-agent-x', mine), self)).toEqual({
      kind: 'adopt',
      name: 'dsh-aaaa11112222-agent-x',
      legacy: false,
    });
    const pool = { ...mine, 'dsh.pool': '1' };
    expect(
      classify(listed('dsh-aaaa11112222-pool-1', { ...pool, 'dsh.pool.owner': 'proc-old' }), self).kind,
    ).toBe('remove');
    expect(
      classify(listed('dsh-aaaa11112222-pool-2', { ...pool, 'dsh.pool.owner': 'proc-now' }), self).kind,
    ).toBe('keep');
    // Assigned to an agent by a process that ended before renaming it: the store says whose it is.
    expect(
      classify(
        listed('dsh-aaaa11112222-pool-3', { ...pool, 'dsh.pool.owner': 'proc-old' }, 'assigned-id'),
        self,
      ),
    ).toEqual({ kind: 'assign', agentId: 'agent-z' });
    // A pooled container already assigned to an agent (renamed) is an agent, never a leftover.
    expect(
      classify(listed('dsh-aaaa11112222-agent-y', { ...pool, 'dsh.pool.owner': 'proc-old' }), self).kind,
    ).toBe('adopt');
  });

  it("keeps the pools of the instance's live replicas, removes those of replicas that no longer run", () => {
    const pool = { ...mine, 'dsh.pool': '1' };
    const replica = { ...self, live: new Set(['replica-a:1']) };
    const of = (owner: string, id?: string) =>
      classify(listed(`dsh-aaaa11112222-pool-${owner}`, { ...pool, 'dsh.pool.owner': owner }, id), replica);
    expect(of('replica-a:1')).toEqual({ kind: 'keep' });
    // Assigning it now: the live replica renames it itself.
    expect(of('replica-a:1', 'assigned-id')).toEqual({ kind: 'keep' });
    expect(of('replica-a:0')).toEqual({ kind: 'remove' });
    expect(of('replica-a:0', 'assigned-id')).toEqual({ kind: 'assign', agentId: 'agent-z' });
    // A pool container without an owner label is nobody's live pool.
    expect(classify(listed('dsh-aaaa11112222-pool-x', pool), replica).kind).toBe('remove');
  });

  it("never touches another instance's containers, whatever their names", () => {
    const pool = { ...theirs, 'dsh.pool': '1', 'dsh.pool.owner': 'x' };
    for (const name of ['dsh-bbbb33334444-pool-1', 'dsh-bbbb33334444-agent-x', 'dsh-pool-1', 'dsh-agent-x'])
      expect(classify(listed(name, pool, 'legacy-claimed'), self)).toEqual({ kind: 'keep' });
  });

  it('takes containers from before instance ids only with proof: claimed agents, pools in its own workspace folder', () => {
    expect(classify(listed('dsh-agent-old', {}, 'legacy-claimed'), self)).toEqual({
      kind: 'adopt',
      name: 'dsh-agent-old',
      legacy: true,
    });
    expect(classify(listed('dsh-agent-other', {}, 'unknown-id'), self).kind).toBe('keep');
    const pool = { 'dsh.pool': '1', 'dsh.pool.owner': 'old' };
    expect(classify(listed('dsh-pool-1', pool), self).kind).toBe('remove');
    expect(classify(listed('dsh-pool-2', pool, 'p2', '/elsewhere/dsh-pool-2-ws'), self).kind).toBe('keep');
  });

  it('gives each instance its own names, and sweeps only its own and legacy workspaces', () => {
    const a = naming('dsh', 'aaaa11112222');
    const b = naming('dsh', 'bbbb33334444');
    expect(a.agent('same')).toBe('dsh-aaaa11112222-agent-same');
    expect(a.agent('same')).not.toBe(b.agent('same'));
    expect(a.legacyAgent('same')).toBe('dsh-agent-same');
    expect(a.pool('x/y')).toMatch(/^dsh-aaaa11112222-pool-xxy$/);
    const only = sweepable('dsh', 'aaaa11112222');
    expect(['dsh-aaaa11112222-agent-x-ws', 'dsh-agent-x-ws', 'dsh-pool-1-ws'].every(only)).toBe(true);
    expect(only('dsh-bbbb33334444-agent-x-ws')).toBe(false);
    expect(() => naming('dsh', 'Not Valid')).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });

  it('reclaims agent containers the store (restored to an older point) does not know, made before its read', () => {
    const knownAt = Date.UTC(2026, 0, 1);
    const restored: Owner = { ...self, known: new Set(['dsh-aaaa11112222-agent-kept']), knownAt };
    const made = (name: string, ms: number, labels = mine) =>
      ({ ...listed(name, labels), Created: Math.floor(ms / 1000) }) as Docker.ContainerInfo;
    const old = knownAt - 120_000;
    expect(classify(made('dsh-aaaa11112222-agent-kept', old), restored).kind).toBe('adopt');
    expect(classify(made('dsh-aaaa11112222-agent-later', old), restored)).toEqual({
      kind: 'reclaim',
      name: 'dsh-aaaa11112222-agent-later',
    });
    // Made after the store was read: maybe a replica's new agent, kept.
    expect(classify(made('dsh-aaaa11112222-agent-new', knownAt + 5_000), restored).kind).toBe('adopt');
    // Never another instance's, and nothing is judged without the store's list.
    expect(classify(made('dsh-bbbb33334444-agent-later', old, theirs), restored).kind).toBe('keep');
    expect(classify(made('dsh-aaaa11112222-agent-later', old), self).kind).toBe('adopt');
  });
});
