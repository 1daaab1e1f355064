// The EventSearch contract: every implementation runs this suite through a one-line test file,
// with an async factory (a PostgreSQL database starts asynchronously). A factory gives a search,
// the event log that indexes what it stores, and a way to make tenants and agents (a session is an
// agent's log), so the cases need no backend of their own.
import { describe, expect, it } from 'vitest';
import type { ClosableEventLog } from '../../../host/store/event-log-port.ts';
import type { EventSearch, SessionEventInput } from '../../../host/store/types.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface EventSearchInstance {
  search: EventSearch;
  log: ClosableEventLog;
  tenant(name: string): Promise<string>;
  /** An agent of `tenantId` (a child of `parentId` when given); its id is its session's. */
  agent(tenantId: string, parentId?: string): Promise<string>;
  /** Deletes the agent; its session stays searchable as `persisted`. */
  deleteAgent(tenantId: string, id: string): Promise<void>;
  cleanup(): Promise<void> | void;
}

export interface EventSearchFactory {
  name: string;
  open(): Promise<EventSearchInstance>;
}

const result = (sessionId: string, text: string): SessionEventInput => ({
  sessionId,
  type: 'tool.result',
  surface: 'current',
  callId: 'c',
  data: { name: 'bash', ok: true, content: [{ type: 'text', text }] },
});

export const runEventSearchContract = (factory: EventSearchFactory) => {
  describe(`EventSearch contract (${factory.name})`, () => {
    const open = closedAfterEach(
      (): Promise<EventSearchInstance> => factory.open(),
      (opened) => opened.cleanup(),
    );

    it('indexes a large value once, with the event that stored it, and keeps tenants apart', async () => {
      const { search, log, tenant, agent } = await open();
      const a = await tenant('a');
      const b = await tenant('b');
      const agentA = await agent(a);
      const agentB = await agent(b);
      const big = `pelican-77 ${'x'.repeat(40 * 1024)}`;
      await log.append([result(agentA, big), result(agentA, big), result(agentB, big)]);
      await log.flush();
      expect(
        (await search.search({ tenantId: a, query: 'pelican-77', limit: 5 })).map((h) => [
          h.sessionId,
          h.seq,
        ]),
      ).toEqual([[agentA, 1]]);
      expect(
        (await search.search({ tenantId: b, query: 'pelican-77', limit: 5 })).map((h) => h.sessionId),
      ).toEqual([agentB]);
      expect(
        await search.search({ tenantId: b, query: 'pelican-77', sessionIds: [agentA], limit: 5 }),
      ).toEqual([]);
    });

    it('finds events newest first, every word required, within its filters and limit', async () => {
      const { search, log, tenant, agent } = await open();
      const t = await tenant('t');
      const s = await agent(t);
      await log.append([
        result(s, 'heron alpha'),
        { ...result(s, 'heron beta'), type: 'tool.call', surface: 'log-only' },
        result(s, 'heron alpha beta'),
      ]);
      await log.flush();
      const seqs = async (query: Parameters<EventSearch['search']>[0]) =>
        (await search.search(query)).map((h) => h.seq);
      expect(await seqs({ tenantId: t, query: 'heron', limit: 10 })).toEqual([3, 2, 1]);
      expect(await seqs({ tenantId: t, query: 'heron beta', limit: 10 })).toEqual([3, 2]);
      expect(await seqs({ tenantId: t, query: 'heron', limit: 2 })).toEqual([3, 2]);
      expect(await seqs({ tenantId: t, query: 'heron', types: ['tool.call'], limit: 10 })).toEqual([2]);
      expect(await seqs({ tenantId: t, query: 'heron', surfaces: ['current'], limit: 10 })).toEqual([3, 1]);
      expect(await seqs({ tenantId: t, query: 'heron', seqFrom: 2, seqTo: 2, limit: 10 })).toEqual([2]);
      expect(await seqs({ tenantId: t, query: 'nothing-here', limit: 10 })).toEqual([]);
      expect(await seqs({ tenantId: t, query: 'heron', sessionIds: [], limit: 10 })).toEqual([]);
    });

    it("describes a tenant's sessions, their children and counts, deleted agents' too", async () => {
      const { search, log, tenant, agent, deleteAgent } = await open();
      const t = await tenant('t');
      const other = await tenant('o');
      const root = await agent(t);
      const child = await agent(t, root);
      await log.append([
        result(root, 'one'),
        result(root, 'two'),
        { ...result(root, 'call'), type: 'tool.call' },
      ]);
      await log.flush();
      expect(await search.session(t, root)).toMatchObject({
        id: root,
        availability: 'live',
        lastSeq: 3,
      });
      expect(await search.session(t, root)).not.toHaveProperty('parentId');
      expect(await search.session(t, child)).toMatchObject({ id: child, parentId: root, lastSeq: 0 });
      expect(await search.session(other, root)).toBeUndefined();
      expect(await search.session(t, 'no-such-session')).toBeUndefined();
      expect(await search.children(t, [root])).toEqual([child]);
      expect(await search.children(other, [root])).toEqual([]);
      expect(await search.count(t, root, 'tool.result')).toBe(2);
      expect(await search.count(t, root, 'tool.call')).toBe(1);
      expect(await search.count(other, root, 'tool.result')).toBe(0);
      await deleteAgent(t, child);
      expect(await search.session(t, child)).toMatchObject({ availability: 'persisted' });
      expect(await search.children(t, [root])).toEqual([child]);
    });
  });
};
