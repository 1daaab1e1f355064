// The NodeStore contract (each agent's node, runtime cordons): every backend runs this suite
// through a one-line test file. `reopen` opens the store again on the same database (a restart,
// or another replica).
import { describe, expect, it } from 'vitest';
import type { NodeStore } from '../../../host/store/nodes.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface NodeStoreInstance {
  store: NodeStore;
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
