// The repair after a crash (host/tools/interrupted.ts) over the in-memory log and request store:
// what a client reading the log after a restart sees.
import { afterEach, describe, expect, it } from 'vitest';
import type { ClosableEventLog } from '../../../host/store/event-log-port.ts';
import { createMemoryEventLog, createMemoryRequestStore } from '../../../host/store/memory.ts';
import type { ClosableRequestStore } from '../../../host/store/request-core.ts';
import type { SessionEventInput } from '../../../host/store/types.ts';
import { callEvent, resultEvent } from '../../../host/tools/call-log.ts';
import {
  INTERRUPTED_MESSAGE,
  repairInterrupted,
  repairInterruptedCalls,
} from '../../../host/tools/interrupted.ts';

const done = (sessionId: string, id: string, parent?: string): SessionEventInput =>
  resultEvent(sessionId, { id, name: 'bash', ok: true, content: [], durationMs: 1 }, parent);

const summary = async (log: ClosableEventLog, sessionId: string) =>
  (await log.list(sessionId, { limit: 5000 }))
    .filter((e) => e.type === 'tool.result')
    .map((e) => [
      e.callId,
      e.parentCallId ?? null,
      e.surface,
      (e.data as { error?: { code: string } }).error?.code ?? 'ok',
    ]);

describe('repairInterrupted', () => {
  const opened: { close(): unknown }[] = [];
  afterEach(async () => {
    for (const o of opened.splice(0)) await o.close();
  });
  const openLog = () => {
    const log = createMemoryEventLog();
    opened.push(log);
    return log;
  };

  it('ends every open call with one INTERRUPTED result, inner calls before their parent, and only once', async () => {
    const log = openLog();
    await log.append([
      callEvent('s', 'c1', 'bash', { command: 'true' }, undefined),
      callEvent('s', 'run', 'run_code', { code: '…' }, undefined),
      callEvent('s', 'run:1', 'read', { path: 'a' }, 'run'),
      done('s', 'c1'),
      callEvent('s', 'run:2', 'bash', { command: 'sleep 20' }, 'run', { kind: 'plugin', pluginId: 'p' }),
      done('s', 'run:1', 'run'),
      callEvent('s', 'c2', 'bash', { command: 'sleep 20' }, undefined),
    ]);
    expect(await repairInterrupted(log)).toBe(3);
    expect(await summary(log, 's')).toEqual([
      ['c1', null, 'current', 'ok'],
      ['run:1', 'run', 'log-only', 'ok'],
      ['run:2', 'run', 'log-only', 'INTERRUPTED'],
      ['run', null, 'current', 'INTERRUPTED'],
      ['c2', null, 'current', 'INTERRUPTED'],
    ]);
    const events = await log.list('s', { limit: 5000 });
    const inner = events.find((e) => e.type === 'tool.result' && e.callId === 'run:2');
    expect(inner?.data).toEqual({
      name: 'bash',
      ok: false,
      content: [{ type: 'text', text: `Error: ${INTERRUPTED_MESSAGE}` }],
      durationMs: 0,
      error: { code: 'INTERRUPTED', message: INTERRUPTED_MESSAGE },
      provenance: { kind: 'plugin', pluginId: 'p' },
    });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    // Idempotent: nothing is left open, so a second run appends nothing.
    const before = events.length;
    expect(await repairInterrupted(log)).toBe(0);
    expect(await log.list('s', { limit: 5000 })).toHaveLength(before);
  });

  it('closes the right one of a repeated call id, in every session or only those asked for', async () => {
    const log = openLog();
    await log.append([
      callEvent('a', 'x', 'bash', {}, undefined),
      done('a', 'x'),
      callEvent('a', 'x', 'bash', {}, undefined),
      callEvent('b', 'x', 'bash', {}, undefined),
    ]);
    expect(await repairInterruptedCalls(log, { sessionIds: ['b'] })).toEqual({
      calls: 1,
      sessions: 1,
      requests: 0,
    });
    expect(await summary(log, 'a')).toEqual([['x', null, 'current', 'ok']]);
    expect(await repairInterruptedCalls(log)).toEqual({ calls: 1, sessions: 1, requests: 0 });
    const a = await log.list('a');
    expect(a.map((e) => [e.seq, e.type, e.callId])).toEqual([
      [1, 'tool.call', 'x'],
      [2, 'tool.result', 'x'],
      [3, 'tool.call', 'x'],
      [4, 'tool.result', 'x'],
    ]);
    expect(await log.unfinishedCalls()).toEqual([]);
  });

  it('cancels the pending requests the interrupted calls waited on, and no other', async () => {
    const log = openLog();
    const requests: ClosableRequestStore = createMemoryRequestStore({ events: log });
    opened.push(requests);
    const expiresAt = Date.now() + 3_600_000;
    await log.append([callEvent('s', 'done', 'agent', {}, undefined)]);
    const background = await requests.create({
      sessionId: 's',
      kind: 'subagent',
      callId: 'done',
      payload: {},
      expiresAt,
    });
    await log.append([done('s', 'done'), callEvent('s', 'ask', 'bash', {}, undefined)]);
    const approval = await requests.create({
      sessionId: 's',
      kind: 'approval',
      callId: 'ask',
      payload: {},
      expiresAt,
    });
    expect(await repairInterruptedCalls(log, { requests })).toEqual({ calls: 1, sessions: 1, requests: 1 });
    expect((await requests.get(approval.id))?.state).toBe('cancelled');
    expect((await requests.get(background.id))?.state).toBe('pending');
    // The request's end is logged before the call's.
    const types = (await log.list('s')).map((e) => [e.type, e.callId]).slice(-2);
    expect(types).toEqual([
      ['request.cancelled', 'ask'],
      ['tool.result', 'ask'],
    ]);
  });
});
