// The SessionStateStore contract: every implementation runs this suite through a one-line test file
// with an async factory (a Postgres run is a third such file). Its cases are what host/session/
// relies on (tests/unit/api/session-tools.test.ts, durability.test.ts): a field never written reads
// as absent, a write replaces the fields it names and leaves the others, and what is stored is a copy.
import { describe, expect, it } from 'vitest';
import type { SessionStateStore } from '../../../host/store/session-state.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';

export interface SessionStateInstance {
  store: SessionStateStore;
  /** Another store on the same storage (a restart); absent where nothing outlives the store. */
  reopen?: () => Promise<SessionStateStore>;
  close(): Promise<void> | void;
}

const todos = [
  { content: 'Read the code', status: 'completed' },
  { content: 'Fix the bug', status: 'in_progress' },
];
const goal = { id: 'goal_1', objective: 'Ship it', state: 'active', revision: 1, usage: { rounds: 0 } };

export const runSessionStateContract = (name: string, open: () => Promise<SessionStateInstance>) => {
  describe(`SessionStateStore contract (${name})`, () => {
    const start = closedAfterEach(open);

    it('reads a session never written as no fields at all', async () => {
      const { store } = await start();
      expect(await store.get('agt_none')).toEqual({});
    });

    it('writes the fields given, each whole, and leaves the others', async () => {
      const { store } = await start();
      await store.set('agt_1', { todos });
      expect(await store.get('agt_1')).toEqual({ todos });
      await store.set('agt_1', { planMode: true, goal });
      expect(await store.get('agt_1')).toEqual({ todos, planMode: true, goal });
      await store.set('agt_1', { todos: todos.slice(1) });
      expect(await store.get('agt_1')).toEqual({ todos: todos.slice(1), planMode: true, goal });
    });

    it('keeps plan mode off and an empty list as values, not as absence', async () => {
      const { store } = await start();
      await store.set('agt_1', { planMode: false, todos: [] });
      expect(await store.get('agt_1')).toEqual({ planMode: false, todos: [] });
    });

    it('keeps each session apart', async () => {
      const { store } = await start();
      await store.set('agt_1', { planMode: true });
      await store.set('agt_2', { todos });
      expect(await store.get('agt_1')).toEqual({ planMode: true });
      expect(await store.get('agt_2')).toEqual({ todos });
    });

    it('stores copies: changing what was given or read back changes nothing stored', async () => {
      const { store } = await start();
      const given = structuredClone(todos);
      const writing = store.set('agt_1', { todos: given });
      given[0]!.content = 'changed';
      await writing;
      const read = await store.get('agt_1');
      (read.todos as { content: string }[])[1]!.content = 'changed';
      expect(await store.get('agt_1')).toEqual({ todos });
    });

    it('keeps both of two stores writing different fields of one session at once', async (ctx) => {
      const { store, reopen } = await start();
      if (reopen === undefined) return ctx.skip();
      // A second store on the same storage: another replica on one database, or another process.
      const other = await reopen();
      await Promise.all([store.set('agt_1', { todos }), other.set('agt_1', { planMode: true, goal })]);
      expect(await store.get('agt_1')).toEqual({ todos, planMode: true, goal });
    });

    it('keeps the state across a restart', async (ctx) => {
      const { store, reopen } = await start();
      if (reopen === undefined) return ctx.skip();
      await store.set('agt_1', { todos, planMode: true, goal });
      expect(await (await reopen()).get('agt_1')).toEqual({ todos, planMode: true, goal });
    });
  });
};
