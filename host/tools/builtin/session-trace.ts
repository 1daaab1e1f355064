// Traces over one session's log (session_event_trace, session_trace): an event's causal chain,
// found by walking back from the event to its root call (each inner call names its parent) and then
// forward from the root to its result, collecting the calls made under it with their depth; and
// the recent root calls of a session. Invariants: reads only the one session it is given, at most
// SESSION_LOG_LIMITS.traceScan events each way, and returns at most traceEvents entries.
import { SandboxError } from '../../errors.ts';
import type { EventLog, SessionEvent } from '../../store/types.ts';
import { eventView, nameOf, SESSION_LOG_LIMITS, shownData } from './session-view.ts';

export const createSessionTraces = (log: Pick<EventLog, 'list'>) => {
  /** The event at `seq` of a session, large values as markers. */
  async function eventAt(sessionId: string, seq: number): Promise<SessionEvent | undefined> {
    const page = await log.list(sessionId, { afterSeq: seq - 1, limit: 1, payloads: 'refs' });
    return page.find((e) => e.seq === seq);
  }

  /** The root calls among the session's last events, newest last. */
  async function recentCalls(sessionId: string, lastSeq: number) {
    const window = 1000;
    const page = await log.list(sessionId, {
      afterSeq: Math.max(0, lastSeq - window),
      limit: window,
      payloads: 'refs',
    });
    const calls = new Map<
      string,
      { call_id: string; name?: string; seq: number; inner_calls: number; ok?: boolean }
    >();
    const rootOf = new Map<string, string>();
    for (const e of page) {
      if (e.callId === undefined) continue;
      if (e.type === 'tool.call' && e.parentCallId === undefined) {
        const name = nameOf(e);
        calls.set(e.callId, {
          call_id: e.callId,
          ...(name === undefined ? {} : { name }),
          seq: e.seq,
          inner_calls: 0,
        });
      } else if (e.type === 'tool.call' && e.parentCallId !== undefined) {
        const root = rootOf.get(e.parentCallId) ?? e.parentCallId;
        rootOf.set(e.callId, root);
        const call = calls.get(root);
        if (call !== undefined) call.inner_calls++;
      } else if (e.type === 'tool.result' && e.parentCallId === undefined) {
        const call = calls.get(e.callId);
        if (call !== undefined) call.ok = (e.data as { ok?: unknown }).ok === true;
      }
    }
    return [...calls.values()].slice(-20);
  }

  /** The event's root call and everything under it (see session_event_trace). */
  async function traceOf(sessionId: string, seq: number) {
    const target = await eventAt(sessionId, seq);
    if (target === undefined)
      throw new SandboxError('NOT_FOUND', `Session ${sessionId} has no event ${seq}.`);
    if (target.callId === undefined)
      return { session_id: sessionId, seq, root: null, events: [eventView(target, 400)], truncated: false };
    // Backwards: follow parent calls to the root call (the nearest earlier tool.call of each id).
    let want = target.parentCallId ?? target.callId;
    let rootSeq = target.type === 'tool.call' && target.parentCallId === undefined ? seq : undefined;
    let scanned = 0;
    let end = seq;
    while (rootSeq === undefined && end > 1 && scanned < SESSION_LOG_LIMITS.traceScan) {
      const from = Math.max(0, end - 200);
      const page = await log.list(sessionId, { afterSeq: from, limit: end - from, payloads: 'refs' });
      scanned += page.length;
      for (const e of page.reverse()) {
        if (e.seq >= end || e.type !== 'tool.call' || e.callId !== want) continue;
        if (e.parentCallId === undefined) {
          rootSeq = e.seq;
          break;
        }
        want = e.parentCallId;
      }
      end = from + 1;
      if (from === 0) break;
    }
    if (rootSeq === undefined)
      return {
        session_id: sessionId,
        seq,
        root: null,
        events: [eventView(target, 400)],
        truncated: scanned >= SESSION_LOG_LIMITS.traceScan,
      };
    // Forwards from the root: its events and those of every call made under it, until its result.
    const rootEvent = (await eventAt(sessionId, rootSeq))!;
    const depth = new Map<string, number>([[rootEvent.callId!, 0]]);
    const events: ReturnType<typeof traceEntry>[] = [];
    let after = rootSeq - 1;
    let done = false;
    scanned = 0;
    while (
      !done &&
      scanned < SESSION_LOG_LIMITS.traceScan &&
      events.length < SESSION_LOG_LIMITS.traceEvents
    ) {
      const page = await log.list(sessionId, { afterSeq: after, limit: 200, payloads: 'refs' });
      if (page.length === 0) break;
      scanned += page.length;
      for (const e of page) {
        after = e.seq;
        if (e.callId === undefined) continue;
        // Inner calls name their parent; requests and the root's own events name only their call.
        const parent = e.parentCallId;
        if (parent === undefined ? !depth.has(e.callId) : !depth.has(parent)) continue;
        if (parent !== undefined && !depth.has(e.callId)) depth.set(e.callId, depth.get(parent)! + 1);
        events.push(traceEntry(e, depth.get(e.callId) ?? 0));
        if (e.type === 'tool.result' && e.parentCallId === undefined && e.callId === rootEvent.callId) {
          done = true;
          break;
        }
        if (events.length >= SESSION_LOG_LIMITS.traceEvents) break;
      }
    }
    const name = nameOf(rootEvent);
    return {
      session_id: sessionId,
      seq,
      root: { call_id: rootEvent.callId, seq: rootSeq, ...(name === undefined ? {} : { name }) },
      events,
      truncated: !done,
    };
  }

  return { eventAt, recentCalls, traceOf };
};

/** One event of a trace: what it is and where it sits, its data only as a short preview. */
const traceEntry = (e: SessionEvent, depth: number) => {
  const name = nameOf(e);
  const ok = (e.data as { ok?: unknown } | null)?.ok;
  return {
    seq: e.seq,
    type: e.type,
    call_id: e.callId,
    ...(e.parentCallId === undefined ? {} : { parent_call_id: e.parentCallId }),
    depth,
    ...(name === undefined ? {} : { name }),
    ...(typeof ok === 'boolean' ? { ok } : {}),
    data: shownData(e.data, 400),
  };
};
