// The unfinished-calls contract (EventRepairs.unfinishedCalls, host/store/event-log-calls.ts): the
// calls a log holds without a result, found from the open-call counter the writes keep, the same
// on every backend. Run by the event-log test files beside the EventLog contract.
import { describe, expect, it } from 'vitest';
import type { SessionEventInput } from '../../../host/store/types.ts';
import { closedAfterEach } from '../../helpers/per-test.ts';
import type { EventLogContractInstance, EventLogFactory } from './event-log-factory.ts';

const call = (
  sessionId: string,
  callId: string,
  extra: Partial<SessionEventInput> & { name?: string; provenance?: { plugin: string } } = {},
): SessionEventInput => {
  const { name = 'bash', provenance, ...rest } = extra;
  return {
    sessionId,
    type: 'tool.call',
    surface: 'current',
    callId,
    data: { name, arguments: { command: 'sleep 20' }, ...(provenance === undefined ? {} : { provenance }) },
    ...rest,
  };
};

const result = (sessionId: string, callId: string, parentCallId?: string): SessionEventInput => ({
  sessionId,
  type: 'tool.result',
  surface: parentCallId === undefined ? 'current' : 'log-only',
  callId,
  ...(parentCallId === undefined ? {} : { parentCallId }),
  data: { name: 'bash', ok: true, content: [], durationMs: 1 },
});

const other = (sessionId: string): SessionEventInput => ({
  sessionId,
  type: 'message.user',
  surface: 'current',
  data: { role: 'user', content: 'hi' },
});

export const runUnfinishedCallsContract = (factory: EventLogFactory) => {
  describe(`unfinished calls (${factory.name})`, () => {
    const open = closedAfterEach(
      (): Promise<EventLogContractInstance> => factory.open(),
      (opened) => opened.cleanup(),
    );

    it('reports none for a log whose calls all have results, across batches and sessions', async () => {
      const { log } = await open();
      await log.append([other('a'), call('a', 'c1'), call('b', 'c1')]);
      await log.flush();
      await log.append([result('a', 'c1'), other('b')]);
      await log.append([result('b', 'c1')]);
      expect(await log.unfinishedCalls()).toEqual([]);
    });

    it('reports a call left open with its name, surface, parent, provenance, seq and time', async () => {
      const { log } = await open();
      const [root, inner] = await log.append([
        call('s', 'run'),
        call('s', 'run:1', {
          surface: 'log-only',
          parentCallId: 'run',
          name: 'read',
          provenance: { plugin: 'p1' },
        }),
      ]);
      await log.append([other('s'), call('s', 'done'), result('s', 'done')]);
      expect(await log.unfinishedCalls()).toEqual([
        {
          sessionId: 's',
          seq: 1,
          callId: 'run',
          name: 'bash',
          surface: 'current',
          parentCallId: undefined,
          at: root!.at,
        },
        {
          sessionId: 's',
          seq: 2,
          callId: 'run:1',
          name: 'read',
          surface: 'log-only',
          parentCallId: 'run',
          provenance: { plugin: 'p1' },
          at: inner!.at,
        },
      ]);
    });

    it('matches a repeated call id in seq order: a result closes the earliest open call', async () => {
      const { log } = await open();
      // Settled, then reused and left open.
      await log.append([call('a', 'x'), result('a', 'x'), call('a', 'x')]);
      // Two open at once, one result: the later stays open.
      await log.append([call('b', 'y'), call('b', 'y')]);
      await log.append([result('b', 'y')]);
      const open1 = await log.unfinishedCalls();
      expect(open1.map((c) => [c.sessionId, c.callId, c.seq])).toEqual([
        ['a', 'x', 3],
        ['b', 'y', 2],
      ]);
    });

    it('reads only the sessions asked for', async () => {
      const { log } = await open();
      await log.append([call('a', 'c'), call('b', 'c'), call('c', 'c'), result('c', 'c')]);
      const found = await log.unfinishedCalls({ sessionIds: ['b', 'c', 'nobody'] });
      expect(found.map((c) => c.sessionId)).toEqual(['b']);
      expect(await log.unfinishedCalls({ sessionIds: [] })).toEqual([]);
    });

    it('counts appends not yet written, and a result appended for an open call closes it', async () => {
      const { log } = await open();
      void log.append([call('s', 'c')]);
      expect((await log.unfinishedCalls()).map((c) => c.callId)).toEqual(['c']);
      await log.append([result('s', 'c')]);
      expect(await log.unfinishedCalls()).toEqual([]);
    });

    it('keeps the count exact when a second process wrote the same session meanwhile', async () => {
      const opened = await open();
      if (opened.reopen === undefined) return;
      const second = await opened.reopen();
      await opened.log.append([call('s', 'a')]);
      await opened.log.flush();
      await second.append([call('s', 'b'), result('s', 'b')]);
      await second.flush();
      // The first log's next seq is taken: its write is renumbered after the second's rows.
      await opened.log.append([call('s', 'c')]);
      await opened.log.flush();
      expect((await second.unfinishedCalls()).map((c) => [c.callId, c.seq])).toEqual([
        ['a', 1],
        ['c', 4],
      ]);
    });

    it('survives a restart: a reopened log reports the first one’s open calls', async () => {
      const opened = await open();
      if (opened.reopen === undefined) return;
      await opened.log.append([call('s', 'c1'), call('s', 'c2'), result('s', 'c2')]);
      await opened.log.flush();
      const again = await opened.reopen();
      expect((await again.unfinishedCalls()).map((c) => [c.callId, c.seq])).toEqual([['c1', 1]]);
      await again.append([result('s', 'c1')]);
      expect(await again.unfinishedCalls()).toEqual([]);
    });
  });
};
