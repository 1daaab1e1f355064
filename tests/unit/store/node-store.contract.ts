// The NodeStore contract (each agent's node, runtime cordons): every backend runs this suite
// through a one-line test file. `reopen` opens the store again on the same database (a restart,
// or another replica).
import { describe, expect, it } from 'vitest';
import type { NodeStore } from '../../../host/store/nodes.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface NodeStoreInstance {
  store: NodeStore;
  /** An agent row of `tenant` (its tenant made when new); `deleted` marks it deleted. */
  addAgent(id: string, tenant: string, deleted?: boolean): Promise<void>;
  reopen(): Promise<NodeStore>;
  close(): Promise<void> | void;
}

export const runNodeStoreContract = (harness: { name: string; open(): Promise<NodeStoreInstance> }) => {
  describe(`NodeStore contract (${harness.name})`, () => {
    const open = closedAfterEach((): Promise<NodeStoreInstance> => harness.open());

    it("records an agent's node, moves it, forgets it, and counts agents per node", async () => {
      const { store } = await open();
      expect(await store.nodeOf('ag_1')).toBeUndefined();
      await store.place('ag_1', 'a');
      await store.place('ag_2', 'a');
      await store.place('ag_3', 'b');
      expect(await store.nodeOf('ag_1')).toBe('a');
      await store.place('ag_1', 'b');
      expect(await store.nodeOf('ag_1')).toBe('b');
      expect(await store.agentCounts()).toEqual(
        new Map([
          ['a', 1],
          ['b', 2],
        ]),
      );
      await store.forget('ag_1');
      await store.forget('ag_unknown');
      expect(await store.nodeOf('ag_1')).toBeUndefined();
      expect(await store.agentCounts()).toEqual(
        new Map([
          ['a', 1],
          ['b', 1],
        ]),
      );
    });

    it("counts one tenant's live agents per node, not other tenants' nor deleted ones", async () => {
      const { store, addAgent } = await open();
      await addAgent('ag_1', 'tn_a');
      await addAgent('ag_2', 'tn_a');
      await addAgent('ag_3', 'tn_a');
      await addAgent('ag_4', 'tn_b');
      await addAgent('ag_5', 'tn_a', true);
      for (const [agent, node] of [
        ['ag_1', 'a'],
        ['ag_2', 'b'],
        ['ag_3', 'b'],
        ['ag_4', 'a'],
        ['ag_5', 'a'],
      ] as const)
        await store.place(agent, node);
      expect(await store.tenantCounts('tn_a')).toEqual(
        new Map([
          ['a', 1],
          ['b', 2],
        ]),
      );
      expect(await store.tenantCounts('tn_b')).toEqual(new Map([['a', 1]]));
      expect(await store.tenantCounts("tn_x' OR '1'='1")).toEqual(new Map());
    });

    it('cordons and uncordons idempotently, by name, hostile names kept as text', async () => {
      const { store } = await open();
      expect(await store.cordoned()).toEqual([]);
      await store.setCordon('b', true);
      await store.setCordon('b', true);
      await store.setCordon("a'; DROP TABLE node_cordons; --", true);
      expect(await store.cordoned()).toEqual(["a'; DROP TABLE node_cordons; --", 'b']);
      await store.setCordon('b', false);
      await store.setCordon('b', false);
      expect(await store.cordoned()).toEqual(["a'; DROP TABLE node_cordons; --"]);
    });

    it('keeps nodes and cordons across a reopen', async () => {
      const { store, reopen } = await open();
      await store.place('ag_1', 'b');
      await store.setCordon('a', true);
      const again = await reopen();
      expect(await again.nodeOf('ag_1')).toBe('b');
      expect(await again.cordoned()).toEqual(['a']);
    });
  });
};
