// A tenant's quota of checkpoint bytes over all its agents (`checkpointBytes`, PUT
// /v1/tenants/:id/limits) through the API over the memory provider: past it the tenant's oldest
// checkpoints are dropped first, whichever of its agents holds them (a rollback to one answers
// CHECKPOINT_DROPPED), no call fails for it, another tenant keeps its own, GET /v1/limits shows what
// it holds; a call's pre-images larger than the whole quota are not kept; a restarted tracker counts
// what is on disk; a hostile quota is refused; a drop waiting for its victim's turn drops nothing
// once the tenant is within the quota by then, and an agent deleted while a call of it kept its
// pre-images or a snapshot keeps nothing on disk.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Turn } from '../../../host/agents/checkpoints/index-queue.ts';
import { createCheckpointStore } from '../../../host/agents/checkpoints/store.ts';
import { createTenantLedger } from '../../../host/agents/checkpoints/tenant-ledger.ts';
import { createCheckpointTracker } from '../../../host/agents/checkpoints/tracker.ts';
import {
  type Checkpoint,
  type CheckpointIndex,
  withinTenant,
} from '../../../host/agents/checkpoints/types.ts';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { createTenantQuotaCache, type TenantQuotaCache } from '../../../host/tenants/quota-cache.ts';
import { ADMIN_KEY, type Loose, makeApi } from '../api/harness.ts';

/** The service's default for tenants without the quota (DSH_TENANT_CHECKPOINT_MAX_BYTES's part here). */
const DEFAULT_TENANT_BYTES = 1024 * 1024;

describe("a tenant's quota of checkpoint bytes", () => {
  let dir: string;
  let api: Awaited<ReturnType<typeof makeApi>>;
  let quotas: TenantQuotaCache | undefined;
  let clock = 0;
  const trackerOver = (folder: string) =>
    createCheckpointTracker({
      store: createCheckpointStore(folder),
      // As serve wires it: each agent's bounds, under its tenant's quota (else the service's).
      boundsOf: async (tenantId) =>
        withinTenant(
          { maxBytes: 1024 * 1024, maxCount: 100 },
          quotas?.get(tenantId)?.checkpointBytes ?? DEFAULT_TENANT_BYTES,
        ),
      now: () => ++clock, // distinct times: "oldest" is never a tie
    });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-ckpt-quota-'));
    api = await makeApi({}, { agents: { checkpoints: trackerOver(dir) } });
    quotas = createTenantQuotaCache(api.store.tenants);
    await quotas.ready;
  });
  afterEach(async () => {
    quotas?.close();
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });

  let n = 0;
  /** Writes `bytes` bytes of `fill` to `path`; the call's id (the call must succeed). */
  async function write(key: string, id: string, path: string, fill: string, bytes = 1000): Promise<string> {
    const callId = `c${++n}`;
    const content = fill.repeat(bytes);
    const res = await api.call(key, id, [
      { id: callId, name: 'write', arguments: { file_path: path, content } },
    ]);
    expect(res.status).toBe(200);
    expect(res.json.results[0].isError ?? false).toBe(false);
    return callId;
  }
  const setQuotas = (tenantId: string, body: unknown) =>
    api.request(ADMIN_KEY, 'PUT', `/v1/tenants/${tenantId}/limits`, body);
  const limits = async (key: string): Promise<Loose> => (await api.request(key, 'GET', '/v1/limits')).json;
  const rollback = (key: string, id: string, callId: string) =>
    api.request(key, 'POST', `/v1/agents/${id}/rollback`, { callId });
  const callIds = async (key: string, id: string): Promise<string[]> =>
    (await api.request(key, 'GET', `/v1/agents/${id}/checkpoints`)).json.checkpoints.map(
      (c: Loose) => c.callId,
    );

  it("drops the tenant's oldest checkpoints first, whichever agent holds them, and fails no call", async () => {
    expect((await setQuotas(api.tenantA, { checkpointBytes: 3000 })).status).toBe(200);
    const one = (await api.createAgent(api.keyA)).id;
    const two = (await api.createAgent(api.keyA)).id;
    const other = (await api.createAgent(api.keyB)).id;
    await write(api.keyA, one, 'f.txt', 'a'); // nothing before it: keeps no bytes
    const oldest = await write(api.keyA, one, 'f.txt', 'b'); // keeps 1000 bytes ('a'…)
    const older = await write(api.keyA, one, 'f.txt', 'c');
    await write(api.keyA, two, 'g.txt', 'd');
    const newer = await write(api.keyA, two, 'g.txt', 'e');
    // Tenant B's checkpoints are its own: they neither count nor get dropped.
    await write(api.keyB, other, 'h.txt', 'x', 5000);
    const others = await write(api.keyB, other, 'h.txt', 'y', 5000);
    expect((await limits(api.keyA)).usage.checkpointBytes).toBe(3000);

    // Agent two's next checkpoint takes the tenant past 3000: agent one's oldest goes.
    const newest = await write(api.keyA, two, 'g.txt', 'f');
    const own = await limits(api.keyA);
    expect(own.quotas.checkpointBytes).toBe(3000);
    expect(own.usage.checkpointBytes).toBe(3000);
    expect(await callIds(api.keyA, one)).not.toContain(oldest);
    expect(await callIds(api.keyA, one)).toContain(older);
    expect(await callIds(api.keyA, two)).toEqual(expect.arrayContaining([newer, newest]));
    const dropped = await rollback(api.keyA, one, oldest);
    expect(dropped.json.error.code).toBe('CHECKPOINT_DROPPED');
    expect(await callIds(api.keyB, other)).toContain(others);
    expect((await limits(api.keyB)).usage.checkpointBytes).toBe(5000);

    // What is kept still rolls back, byte-exact.
    expect((await rollback(api.keyA, one, older)).status).toBe(200);
    const sandbox = await api.agents.sandbox(await api.agents.get(api.tenantA, one));
    expect((await sandbox.fs.readFile('f.txt')).toString()).toBe('b'.repeat(1000));

    // A deleted agent's checkpoints no longer count.
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${two}`)).status).toBeLessThan(300);
    expect((await limits(api.keyA)).usage.checkpointBytes).toBeLessThan(3000);
  });

  it('keeps no pre-image larger than the whole quota, and 0 keeps none, the calls running all the same', async () => {
    expect((await setQuotas(api.tenantA, { checkpointBytes: 2000 })).status).toBe(200);
    const id = (await api.createAgent(api.keyA)).id;
    await write(api.keyA, id, 'big.txt', 'a', 5000);
    const big = await write(api.keyA, id, 'big.txt', 'b', 10); // its pre-image: 5000 bytes
    expect((await limits(api.keyA)).usage.checkpointBytes).toBe(0);
    expect((await rollback(api.keyA, id, big)).json.error.code).toBe('CHECKPOINT_DROPPED');

    expect((await setQuotas(api.tenantA, { checkpointBytes: 0 })).status).toBe(200);
    await write(api.keyA, id, 'small.txt', 'c');
    const untracked = await write(api.keyA, id, 'small.txt', 'd');
    expect(await callIds(api.keyA, id)).not.toContain(untracked);
    expect((await limits(api.keyA)).usage.checkpointBytes).toBe(0);
  });

  it("counts what a tenant's checkpoints hold on disk after a restart", async () => {
    expect((await setQuotas(api.tenantA, { checkpointBytes: 2000 })).status).toBe(200);
    const id = (await api.createAgent(api.keyA)).id;
    await write(api.keyA, id, 'f.txt', 'a');
    await write(api.keyA, id, 'f.txt', 'b');
    await write(api.keyA, id, 'f.txt', 'c');
    const restarted = trackerOver(dir);
    expect(await restarted.tenantBytes(api.tenantA)).toBe(2000);
    expect(await restarted.tenantBytes(api.tenantB)).toBe(0);
  });

  it('refuses a quota that is not a whole number of bytes', async () => {
    for (const bad of [-1, 1.5, '1000', 2 ** 60, null]) {
      const res = await setQuotas(api.tenantA, { checkpointBytes: bad });
      expect(res.status).toBe(400);
    }
    expect((await limits(api.keyA)).quotas.checkpointBytes).toBeUndefined();
  });
});

describe("a tenant's quota of checkpoint bytes across a restart", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-ckpt-quota-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  let clock = 0;
  const dropped: string[] = [];
  const trackerOver = (folder: string) =>
    createCheckpointTracker({
      store: createCheckpointStore(folder),
      dropSnapshot: async ({ id }) => void dropped.push(id),
      boundsOf: async () => withinTenant({ maxBytes: 1024 * 1024, maxCount: 100, snapshotBash: true }, 3000),
      now: () => ++clock,
    });
  /** A snapshot checkpoint of 1000 bytes (no sandbox needed): its id. */
  const snap = async (tracker: ReturnType<typeof trackerOver>, agentId: string, id: string) => {
    await tracker.snapshot('ten_a', agentId, { callId: id, tool: 'bash' }, async () => ({
      snapshot: { id, node: 'local', sizeBytes: 1000 },
      bytes: 1000,
    }));
    return id;
  };
  const ids = async (tracker: ReturnType<typeof trackerOver>, agentId: string) =>
    (await tracker.list(agentId)).map((c) => c.callId);

  it('drops the oldest of what it found on disk, and recounts an agent whose folder went away', async () => {
    const before = trackerOver(dir);
    await snap(before, 'one', 's1');
    await snap(before, 'one', 's2');
    await snap(before, 'two', 's3');
    expect(await before.tenantBytes('ten_a')).toBe(3000);

    const after = trackerOver(dir); // a restart: nothing in memory
    expect(await after.tenantBytes('ten_a')).toBe(3000);
    await snap(after, 'two', 's4');
    expect(await ids(after, 'one')).toEqual(['s2']);
    expect(await ids(after, 'two')).toEqual(['s3', 's4']);
    expect(dropped).toEqual(['s1']);
    expect(await after.tenantBytes('ten_a')).toBe(3000);

    // Agent one's folder removed after a start counted it (as a start racing its delete): the
    // ledger counts it again from what is on disk, and drops nothing of agent two's for it.
    const third = trackerOver(dir);
    expect(await third.tenantBytes('ten_a')).toBe(3000);
    rmSync(join(dir, 'one'), { recursive: true });
    await snap(third, 'two', 's5');
    expect(await ids(third, 'two')).toEqual(['s3', 's4', 's5']);
    expect(await third.tenantBytes('ten_a')).toBe(3000);
  });

  it('writes nothing for an agent forgotten (deleted) while a call of it kept its pre-images', async () => {
    const tracker = trackerOver(dir);
    let release = (): void => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reading = (): void => {};
    const read = new Promise<void>((resolve) => {
      reading = resolve;
    });
    // The call's pre-image read and its bash snapshot are under way when the agent's delete forgets it.
    const sandbox = {
      fs: {
        resolve: (path: string) => `/workspace/${path}`,
        readWithStat: async () => {
          reading();
          await held;
          return {
            stat: { type: 'file', size: 1000, mode: 0o644, mtimeMs: 0 },
            data: Buffer.alloc(1000, 'a'),
          };
        },
      },
    } as unknown as Sandbox;
    const begun = tracker.begin('ten_a', 'gone', sandbox, { callId: 'w1', tool: 'write', paths: ['a.txt'] });
    const snapped = tracker.snapshot('ten_a', 'gone', { callId: 's1', tool: 'bash' }, async () => {
      await held;
      return { snapshot: { id: 'snap-late', node: 'local', sizeBytes: 1000 }, bytes: 1000 };
    });
    await read;
    await tracker.forget('gone');
    release();
    await expect(begun).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await snapped;
    expect(existsSync(join(dir, 'gone'))).toBe(false);
    expect(await tracker.tenantBytes('ten_a')).toBe(0);
    expect(dropped).toContain('snap-late'); // its workspace snapshot deleted, not kept by nothing
    // The agent's next calls (a family moved back) are tracked again.
    await snap(tracker, 'gone', 's2');
    expect(await ids(tracker, 'gone')).toEqual(['s2']);
  });

  it("drops nothing once the tenant is within its quota by the time the victim's turn comes", async () => {
    const ledger = createTenantLedger(createCheckpointStore(dir));
    const entry = (seq: number, at: number): Checkpoint => ({
      callId: `c${at}`,
      tool: 'write',
      seq,
      at,
      files: [],
      bytes: 1000,
    });
    const indexOf = (...entries: Checkpoint[]): CheckpointIndex => ({
      seq: entries.length,
      entries,
      dropped: [],
      tenantId: 'ten_a',
    });
    ledger.written('v', indexOf(entry(1, 1)));
    ledger.written('x', indexOf(entry(1, 2), entry(2, 3)));
    ledger.written('y', indexOf(entry(1, 4))); // 4000 bytes against a quota of 3000
    const asked: string[] = [];
    const dropped = await ledger.fit('ten_a', 3000, { agentId: 'y', seq: 1 }, (async (
      agentId: string,
      work: (index: CheckpointIndex) => Promise<Turn<number>>,
    ) => {
      asked.push(agentId);
      // Agent x deleted while this drop waited for v's turn (a rollback of v's under way).
      ledger.forget('x');
      const turn = await work(indexOf(entry(1, 1)));
      if (turn.index) ledger.written(agentId, turn.index);
      return turn.value;
    }) as never);
    expect(asked).toEqual(['v']);
    expect(dropped).toBe(0);
    expect(await ledger.bytes('ten_a')).toBe(2000); // v's checkpoint and y's, both kept
  });
});
