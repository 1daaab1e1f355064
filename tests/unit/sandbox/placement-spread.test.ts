// Placement spreads each tenant's agents (host/sandbox/nodes/placement.ts): a node's free capacity
// counts for less the more of the tenant's agents it holds, so a tenant's second agent goes to
// another node that capacity alone would have passed over, while another tenant's still goes by
// capacity. With the store the count is every replica's (a placement made through another process
// on the same database counts), and deleted agents do not count.
import { describe, expect, it } from 'vitest';
import { DOCKER_DEFAULT_LIMITS, DOCKER_DEFAULT_MAXIMA } from '../../../host/sandbox/docker/config.ts';
import { createPlacement } from '../../../host/sandbox/nodes/placement.ts';
import type { SandboxNode } from '../../../host/sandbox/nodes/types.ts';
import { createNodeStore } from '../../../host/store/nodes.ts';
import { tempDatabase } from '../store/harness.ts';

const GIB = 1024 ** 3;

/** A node with `cpus` CPUs (and memory to spare) that keeps its agents in a set. */
function node(name: string, cpus: number): SandboxNode<never> & { agents: Set<string> } {
  const agents = new Set<string>();
  const sandbox = (agentId: string) => ({ id: `${name}:${agentId}`, limits: DOCKER_DEFAULT_LIMITS });
  return {
    name,
    agents,
    defaults: DOCKER_DEFAULT_LIMITS,
    // Sandboxes of up to 16 CPUs: the free shares here stay under what one may use (placement's shareCap).
    maxima: { ...DOCKER_DEFAULT_MAXIMA, nanoCpus: 16e9, memoryBytes: 64 * GIB },
    pool: { ready: 0, filled: async () => {} },
    ensure: async (spec) => {
      agents.add(spec.agentId);
      return sandbox(spec.agentId);
    },
    find: async (agentId) => (agents.has(agentId) ? sandbox(agentId) : undefined),
    open: async () => {
      throw new Error('not opened here');
    },
    state: async (agentId) => (agents.has(agentId) ? 'running' : 'absent'),
    stop: async () => {},
    pause: async () => 'stop',
    destroy: async (agentId) => {
      agents.delete(agentId);
    },
    usage: async () => undefined,
    adopt: async () => [...agents],
    capacity: async () => ({
      node: name,
      cpus,
      memoryBytes: 64 * GIB,
      sandboxes: agents.size,
      running: agents.size,
      pool: { ready: 0, size: 0 },
      runtimes: ['runc'],
    }),
    close: async () => {},
  };
}

const spec = (agentId: string, tenantId: string) => ({ agentId, tenantId, limits: DOCKER_DEFAULT_LIMITS });

describe('per-tenant spread', () => {
  it("sends a tenant's second agent to another node, another tenant's by capacity", async () => {
    // Capacity alone: big (8 CPUs) is the freer with one agent (8/2 = 4 against 3.5/1).
    const big = node('big', 8);
    const small = node('small', 3.5);
    const p = createPlacement([big, small], { capacityTtlMs: 0 });
    await p.ensure(spec('x1', 'tn_x'));
    expect(p.nodeOf('x1')).toBe('big');
    await p.ensure(spec('x2', 'tn_x'));
    expect(p.nodeOf('x2')).toBe('small'); // big holds one of tn_x's: 4 / 2 = 2 < 3.5
    await p.ensure(spec('y1', 'tn_y'));
    expect(p.nodeOf('y1')).toBe('big'); // tn_y has none anywhere: 4 against 1.75
    await p.destroy('x2');
    await p.ensure(spec('x3', 'tn_x'));
    expect(p.nodeOf('x3')).toBe('small'); // x2 gone; big now holds x1 and y1: 8/3/2 against 3.5
  });

  it("counts the tenant's agents every replica placed, through the store, deleted ones not", async () => {
    const temp = tempDatabase();
    try {
      const db = temp.connect();
      db.prepare("INSERT INTO tenants (id, name, created_at) VALUES ('tn_x', 'x', 0)").run();
      const agent = db.prepare(
        `INSERT INTO agents (id, tenant_id, preset, mode, config, created_at) VALUES (?, 'tn_x', 'p', 'm', '{}', 0)`,
      );
      const big = node('big', 8);
      const small = node('small', 3.5);
      const one = createPlacement([big, small], { capacityTtlMs: 0, store: createNodeStore(temp.connect()) });
      const two = createPlacement([big, small], { capacityTtlMs: 0, store: createNodeStore(temp.connect()) });
      agent.run('x1');
      await one.ensure(spec('x1', 'tn_x'));
      expect(one.nodeOf('x1')).toBe('big');
      agent.run('x2');
      await two.ensure(spec('x2', 'tn_x'));
      expect(two.nodeOf('x2')).toBe('small'); // the other replica's x1 on big counted
      db.prepare("UPDATE agents SET deleted_at = 1 WHERE id = 'x1'").run();
      agent.run('x3');
      await two.ensure(spec('x3', 'tn_x'));
      // x1 deleted: big holds none of tn_x's live agents (8/2 = 4); small holds x2 (3.5/2/2).
      expect(two.nodeOf('x3')).toBe('big');
    } finally {
      temp.cleanup();
    }
  });
});
