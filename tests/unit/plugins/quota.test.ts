// The caps of a tenant's plugins as decisions: each refusal names the cap it is (LIMIT_EXCEEDED,
// data.limit and data.max), and only a host full of other tenants' workers is ISOLATE_UNAVAILABLE.
import { describe, expect, it } from 'vitest';
import { checkCaps, checkFork, type PlacementCaps, sharedCaps } from '../../../host/plugins/quota.ts';

const caps: PlacementCaps = {
  maxRunningPerAgent: 3,
  maxRunningPerTenant: 4,
  maxMemoryMbPerAgent: 40,
  maxMemoryMbPerTenant: 60,
  maxWorkersPerTenant: 2,
};
const held = (...agents: Array<[string, number]>) =>
  agents.map(([agentId, memoryMb]) => ({ owner: { tenantId: 't', agentId }, memoryMb }));
const refusal = (fn: () => void) => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
};
const owner = { tenantId: 't', agentId: 'a' };

describe('sharedCaps (replicas: a tenant-wide cap over the live replicas)', () => {
  const overTwo = (cap: number) => Math.ceil(cap / 2);

  it("cuts the tenant's running and heap caps to this replica's part, and leaves the agent's and the workers' whole", () => {
    expect(sharedCaps(caps, overTwo)).toEqual({ ...caps, maxRunningPerTenant: 2, maxMemoryMbPerTenant: 30 });
    expect(sharedCaps(caps, undefined)).toBe(caps);
  });

  it('refuses a third plugin of the tenant on a replica that holds its part (two of four over two replicas)', () => {
    expect(
      refusal(() => checkCaps(held(['a', 1], ['b', 1]), owner, 1, sharedCaps(caps, overTwo))),
    ).toMatchObject({ code: 'LIMIT_EXCEEDED', data: { limit: 'maxRunningPerTenant', max: 2 } });
    expect(refusal(() => checkCaps(held(['a', 1]), owner, 1, sharedCaps(caps, overTwo)))).toBeUndefined();
  });
});

describe('checkCaps', () => {
  it('admits under every cap', () => {
    expect(refusal(() => checkCaps(held(['a', 10], ['b', 10]), owner, 10, caps))).toBeUndefined();
  });

  it.each([
    ['maxRunningPerAgent', 3, held(['a', 1], ['a', 1], ['a', 1]), 1],
    ['maxRunningPerTenant', 4, held(['a', 1], ['b', 1], ['b', 1], ['c', 1]), 1],
    ['maxMemoryMbPerAgent', 40, held(['a', 16], ['a', 16]), 16],
    ['maxMemoryMbPerTenant', 60, held(['a', 16], ['b', 16], ['c', 16]), 16],
  ] as const)('refuses past %s, naming it', (limit, max, placements, memoryMb) => {
    expect(refusal(() => checkCaps(placements, owner, memoryMb, caps))).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      data: { limit, max },
      message: expect.stringContaining(`${limit} ${max}`),
    });
  });
});

describe('checkFork', () => {
  const host = (running: number) => ({ running, maxWorkers: 4, reserveWorkers: 1 });

  it("forks a tenant's first worker while the host has room, its second only above the reserve", () => {
    expect(refusal(() => checkFork(0, host(3), caps))).toBeUndefined();
    expect(refusal(() => checkFork(1, host(2), caps))).toBeUndefined();
    expect(refusal(() => checkFork(1, host(3), caps))).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      data: { limit: 'maxWorkersPerTenant', max: 1 },
    });
  });

  it("stops at the tenant's own cap, never above the host's less the reserve", () => {
    expect(refusal(() => checkFork(2, host(2), caps))).toMatchObject({
      data: { limit: 'maxWorkersPerTenant', max: 2 },
    });
    expect(refusal(() => checkFork(3, host(3), { ...caps, maxWorkersPerTenant: 100 }))).toMatchObject({
      data: { limit: 'maxWorkersPerTenant', max: 3 },
    });
  });

  it('is ISOLATE_UNAVAILABLE only for a tenant without a worker on a full host', () => {
    expect(refusal(() => checkFork(0, host(4), caps))).toMatchObject({ code: 'ISOLATE_UNAVAILABLE' });
  });
});
