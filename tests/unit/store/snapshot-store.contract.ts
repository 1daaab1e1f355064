// The SnapshotStore contract (workspace snapshots' rows, scoped by tenant): every backend runs
// this suite through a one-line test file. `tenant` makes a tenant the rows can belong to;
// `reopen` opens the store again on the same database (a restart or another process).
import { describe, expect, it } from 'vitest';
import type { SnapshotRecord, SnapshotStore } from '../../../host/store/snapshots.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface SnapshotStoreInstance {
  store: SnapshotStore;
  tenant(name: string): Promise<string>;
  reopen(): Promise<SnapshotStore>;
  close(): Promise<void> | void;
}

const record = (over: Partial<SnapshotRecord> & Pick<SnapshotRecord, 'id' | 'tenantId'>): SnapshotRecord => ({
  agentId: 'agent-1',
  node: 'local',
  sizeBytes: 5 * 1024 ** 3, // past 32 bits: a bigint on PostgreSQL
  bytes: 200 * 1024 ** 2,
  createdAt: 1_700_000_000_000,
  ...over,
});

export const runSnapshotStoreContract = (harness: {
  name: string;
  open(): Promise<SnapshotStoreInstance>;
}) => {
  describe(`SnapshotStore contract (${harness.name})`, () => {
    const open = closedAfterEach((): Promise<SnapshotStoreInstance> => harness.open());

    it('keeps a snapshot for its tenant only, lists by agent, counts bytes, removes once', async () => {
      const { store, tenant } = await open();
      const a = await tenant('a');
      const b = await tenant('b');
      await store.add(record({ id: 's1', tenantId: a, createdAt: 1 }));
      await store.add(record({ id: 's2', tenantId: a, agentId: 'agent-2', bytes: 10, createdAt: 2 }));
      await store.add(record({ id: 's3', tenantId: b, bytes: 7 }));
      expect(await store.get(a, 's1')).toEqual(record({ id: 's1', tenantId: a, createdAt: 1 }));
      expect(await store.get(b, 's1')).toBeUndefined();
      expect((await store.list(a)).map((s) => s.id)).toEqual(['s1', 's2']);
      expect((await store.list(a, 'agent-2')).map((s) => s.id)).toEqual(['s2']);
      expect(await store.list(b, 'agent-2')).toEqual([]);
      expect(await store.totalBytes(a)).toBe(200 * 1024 ** 2 + 10);
      expect(await store.remove(b, 's1')).toBe(false);
      expect(await store.remove(a, 's1')).toBe(true);
      expect(await store.remove(a, 's1')).toBe(false);
      expect(await store.get(a, 's1')).toBeUndefined();
      expect(await store.totalBytes(a)).toBe(10);
      expect(await store.totalBytes(await tenant('c'))).toBe(0);
    });

    it("tells which ids have a row, whichever tenant's", async () => {
      const { store, tenant } = await open();
      const [a, b] = [await tenant('a'), await tenant('b')];
      await store.add(record({ id: 'snap_a', tenantId: a }));
      await store.add(record({ id: 'snap_b', tenantId: b }));
      await store.add(record({ id: 'snap_gone', tenantId: b }));
      await store.remove(b, 'snap_gone');
      const asked = ['snap_a', 'snap_b', 'snap_gone', 'ckpt_x', "x' OR '1'='1", ''];
      expect(await store.recorded(asked)).toEqual(new Set(['snap_a', 'snap_b']));
      expect(await store.recorded([])).toEqual(new Set());
    });

    it('keeps snapshots across a reopen', async () => {
      const { store, tenant, reopen } = await open();
      const a = await tenant('a');
      await store.add(record({ id: 's1', tenantId: a }));
      expect(await (await reopen()).get(a, 's1')).toEqual(record({ id: 's1', tenantId: a }));
    });
  });
};
