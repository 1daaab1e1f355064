// One tenant cannot take every other tenant's plugins away. All tenants' plugins used to share the
// plugin workers: tenant A started 34 idle plugins over three agents and tenant B's first
// cordis_run failed "The plugin workers have no room for another plugin now". Guarantee: each
// tenant's plugins run on worker processes of its own, made on demand and ended when idle; A,
// filling everything it may over several agents, is refused with LIMIT_EXCEEDED naming its own cap
// (per agent, per tenant, its workers' share of the host), while B's first plugin starts and runs;
// a worker of A's that dies takes none of B's plugins with it; no tenant can take the host's last
// workers from tenants that have none. Over HTTP, real plugin workers, real isolates.
import { afterAll, describe, expect, it } from 'vitest';
import {
  createPluginProcesses,
  type PlacementCaps,
  type PluginProcessEvent,
} from '../../../host/plugins/processes.ts';
import { DEFAULT_PLUGIN_LIMITS } from '../../../host/plugins/types.ts';
import { until } from '../../helpers/until.ts';
import { pluginService } from './plugin-service.ts';

const IDLE = "return { name: 'idle', apply() {} }";
const WORKER = `return { name: 'worker', apply(ctx) {
  ctx.tools.register({ name: 'hang', description: 'never answers', parameters: { type: 'object' }, execute: () => new Promise(() => {}) });
  ctx.tools.register({ name: 'ping', description: 'pong', parameters: { type: 'object' }, execute: () => 'pong' });
} }`;

/** Resolves with the first event that `match` accepts. */
const events: PluginProcessEvent[] = [];
const waiters = new Set<(event: PluginProcessEvent) => void>();
const next = (match: (event: PluginProcessEvent) => boolean) =>
  new Promise<PluginProcessEvent>((resolve) => {
    const hit = events.find(match);
    if (hit) return resolve(hit);
    const waiter = (event: PluginProcessEvent) => {
      if (!match(event)) return;
      waiters.delete(waiter);
      resolve(event);
    };
    waiters.add(waiter);
  });

describe("a tenant that fills its plugins' limits", () => {
  // A worker holds every plugin of these tests (4 GB cap), so the caps under test bind first.
  const processes = createPluginProcesses({
    maxWorkers: 4,
    rssMb: 4096,
    idleMs: 300,
    onEvent(event) {
      events.push(event);
      for (const waiter of [...waiters]) waiter(event);
    },
  });
  const service = pluginService({
    processes,
    limits: { maxRunningPerAgent: 5, maxRunningPerTenant: 12, callWallMs: 60_000 },
  });
  afterAll(async () => {
    await (await service).close();
    await processes.close();
  });

  it("is refused at its own caps; another tenant's first plugin starts and runs", async () => {
    const { keyA, keyB, tenantA, tenantB, call, creator, run } = await service;
    const agents = [await creator(keyA), await creator(keyA), await creator(keyA)];
    let started = 0;
    /** Defines and starts plugins on `agentId` until one is refused (either step); returns that refusal. */
    const fill = async (agentId: string) => {
      for (let i = 0; i < 20; i++) {
        const defined = await call(keyA, agentId, 'cordis_define', {
          plugin: { kind: 'new', idPrefix: 'p' },
          name: `p${i}`,
          purpose: '',
          code: { host: started === 0 ? WORKER : IDLE },
        });
        if (!defined.ok) return defined.error;
        const { pluginId, packageId } = defined.value;
        const result = await call(keyA, agentId, 'cordis_run', { pluginId, packageId, mode: 'run' });
        if (!result.ok) return result.error;
        started++;
      }
      throw new Error('never refused');
    };
    const refusals = [];
    for (const agentId of agents) refusals.push(await fill(agentId));

    // B's first plugin starts at once and answers, on a worker of B's own.
    const b = await creator(keyB);
    const { pluginId, run: result } = await run(keyB, b, WORKER);
    expect(result).toMatchObject({ ok: true });
    expect((await call(keyB, b, 'ping')).value).toBe('pong');
    const pidsA = processes.pids(tenantA);
    const pidsB = processes.pids(tenantB);
    expect(pidsA.length).toBeGreaterThan(0);
    expect(pidsB.length).toBeGreaterThan(0);
    expect(pidsB.filter((pid) => pidsA.includes(pid))).toEqual([]);

    // A was refused at its own caps, with a stable code that names them.
    const perAgent = {
      code: 'LIMIT_EXCEEDED',
      message: expect.stringContaining('This agent runs 5 plugins, its most (maxRunningPerAgent 5)'),
      data: { kind: 'limit', limit: 'maxRunningPerAgent', max: 5 },
    };
    expect(refusals).toEqual([
      perAgent,
      perAgent,
      {
        code: 'LIMIT_EXCEEDED',
        message: expect.stringContaining(
          "This tenant's agents run 12 plugins, its most (maxRunningPerTenant 12)",
        ),
        data: { kind: 'limit', limit: 'maxRunningPerTenant', max: 12 },
      },
    ]);
    expect(started).toBe(12);

    // A's worker dies while both tenants have a call in flight: only A's plugins notice.
    let bSettled = false;
    const bHanging = call(keyB, b, 'hang').finally(() => {
      bSettled = true;
    });
    const aHanging = call(keyA, agents[0] as string, 'hang');
    for (const pid of pidsA) process.kill(pid, 'SIGKILL');
    expect((await aHanging).error.code).toBe('ABORTED');
    await until(() => events.filter((e) => e.type === 'exited' && e.tenantId === tenantA).length > 0);
    // A's plugins come back on a new worker of A's; B's were never touched.
    await until(async () => (await call(keyA, agents[0] as string, 'ping')).value === 'pong', {
      what: "A's plugins started again",
      timeoutMs: 30_000,
    });
    expect(processes.pids(tenantB)).toEqual(pidsB);
    expect(bSettled).toBe(false);
    expect((await call(keyB, b, 'ping')).value).toBe('pong');
    const self = (await call(keyB, b, 'cordis_inspect_self', { pluginId })).value;
    expect(self).toMatchObject({ state: 'running', restarts: 0 });

    // B stops its plugin: the call in flight ends, and B's idle worker is ended after idleMs.
    const reaped = next((e) => e.type === 'reaped' && e.tenantId === tenantB);
    expect((await call(keyB, b, 'cordis_stop', { pluginId })).ok).toBe(true);
    expect((await bHanging).error.code).toBe('ABORTED');
    expect((await reaped).pid).toBe(pidsB[0]);
    expect(processes.pids(tenantB)).toEqual([]);
    // A's workers hold A's plugins, so they stay.
    expect(processes.pids(tenantA).length).toBeGreaterThan(0);
  }, 120_000);
});

describe('the host keeps plugin workers for tenants that have none', () => {
  // One plugin of 64 MB fills a worker of 256 MB, whatever the core count: a placement is a worker.
  const processes = createPluginProcesses({ maxWorkers: 4, reserveWorkers: 1, rssMb: 256, idleMs: 60_000 });
  afterAll(() => processes.close());
  const caps: PlacementCaps = { ...DEFAULT_PLUGIN_LIMITS, maxWorkersPerTenant: 16 };
  const place = (tenantId: string, agentId: string) =>
    processes.place({ owner: { tenantId, agentId }, memoryMb: 64, caps });

  it("a tenant's workers stop short of the host's last; refusals name its own share", async () => {
    const a = [await place('ten_a', 'agt_1'), await place('ten_a', 'agt_2'), await place('ten_a', 'agt_3')];
    expect(new Set(a.map((p) => p.worker.id)).size).toBe(3);
    // Its fourth worker would leave no worker for a tenant that has none.
    await expect(place('ten_a', 'agt_4')).rejects.toMatchObject({
      code: 'LIMIT_EXCEEDED',
      data: { limit: 'maxWorkersPerTenant', max: 3 },
    });
    const b = await place('ten_b', 'agt_9');
    expect(b.worker.tenantId).toBe('ten_b');
    expect(processes.pids('ten_a')).not.toContain(b.worker.pid);
    // Giving one back makes room again for A.
    processes.release(a[0] as (typeof a)[number]);
    processes.release(a[0] as (typeof a)[number]);
    const again = await place('ten_a', 'agt_4');
    expect(again.worker.tenantId).toBe('ten_a');
  }, 60_000);
});
