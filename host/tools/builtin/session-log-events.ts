// The tools on one session's events: `session_event_read` (an event and its neighbours),
// `session_event_search` (full-text, newest first, with a snippet each) and `session_event_trace`
// (an event's causal chain: session-trace.ts).
// Invariants: each reads a session the caller may read (session-log-access.ts), after the log is
// flushed; every result is bounded (events around, hits), large values stay payload markers.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { defineTool } from '../define.ts';
import {
  callerOf,
  eventFilters,
  hitViews,
  Query,
  Seq,
  SessionId,
  type SessionLogState,
  Surface,
  sessionOf,
  Time,
  Types,
} from './session-log-access.ts';
import { eventView, SESSION_LOG_LIMITS } from './session-view.ts';

/** session_event_read */
export function readTool(s: SessionLogState) {
  const { port } = s;
  return defineTool({
    name: 'session_event_read',
    description:
      'Read one event of a session log by its seq, with up to `before` events before it and `after` events after it (at most 20 each). The session is your own unless session_id names another session of your tenant.',
    parameters: v.object({
      session_id: v.optional(SessionId),
      seq: v.pipe(Seq, v.description('The event to read')),
      before: v.optional(v.pipe(Seq, v.description('Events before it to include'))),
      after: v.optional(v.pipe(Seq, v.description('Events after it to include'))),
    }),
    output: { schema: v.object({ session_id: v.string(), events: v.array(v.unknown()) }) },
    isConcurrencySafe: () => true,
    isReadOnly: () => true,
    async execute(args, exec) {
      await port.events.flush();
      const session = await sessionOf(s, callerOf(s, exec), args.session_id);
      const before = Math.min(args.before ?? 0, SESSION_LOG_LIMITS.around);
      const after = Math.min(args.after ?? 0, SESSION_LOG_LIMITS.around);
      const from = Math.max(0, args.seq - before - 1);
      const page = await port.events.list(session.id, {
        afterSeq: from,
        limit: args.seq - from + after,
        payloads: 'refs',
      });
      const events = page.filter((e) => e.seq <= args.seq + after);
      if (!events.some((e) => e.seq === args.seq))
        throw new SandboxError(
          'NOT_FOUND',
          `Session ${session.id} has no event ${args.seq}; its last is ${session.lastSeq}.`,
        );
      return { session_id: session.id, events: events.map((e) => eventView(e)) };
    },
  });
}

/** session_event_search */
export function searchTool(s: SessionLogState) {
  const { port } = s;
  return defineTool({
    name: 'session_event_search',
    description:
      'Full-text search of one session log (your own unless session_id names another of your tenant): events whose text (tool names, arguments, results, messages) contains every word of the query, newest first, at most 20, with a snippet each. Filters: seq and time ranges, event types (e.g. tool.call, tool.result, request.created, schedule.fired) and surfaces.',
    parameters: v.object({
      session_id: v.optional(SessionId),
      query: Query,
      seq_from: v.optional(Seq),
      seq_to: v.optional(Seq),
      time_from: v.optional(Time),
      time_to: v.optional(Time),
      event_types: v.optional(Types),
      surfaces: v.optional(v.pipe(v.array(Surface), v.maxLength(3))),
    }),
    output: { schema: v.object({ session_id: v.string(), hits: v.array(v.unknown()) }) },
    isConcurrencySafe: () => true,
    isReadOnly: () => true,
    async execute(args, exec) {
      const caller = callerOf(s, exec);
      await port.events.flush();
      const session = await sessionOf(s, caller, args.session_id);
      const hits = await port.search.search({
        tenantId: caller.tenantId,
        query: args.query,
        sessionIds: [session.id],
        ...eventFilters(args),
        limit: SESSION_LOG_LIMITS.hits,
      });
      return { session_id: session.id, hits: await hitViews(s, args.query, hits) };
    },
  });
}

/** session_event_trace */
export function traceTool(s: SessionLogState) {
  const { port } = s;
  const { traceOf } = s.traces;
  return defineTool({
    name: 'session_event_trace',
    description:
      "An event's causal chain in its session: the root call it belongs to, the inner calls programs and workflows made under it (with their depth), their requests and results, in log order (at most 200 events).",
    parameters: v.object({ session_id: v.optional(SessionId), seq: Seq }),
    output: { schema: v.unknown() },
    isConcurrencySafe: () => true,
    isReadOnly: () => true,
    async execute(args, exec) {
      await port.events.flush();
      const session = await sessionOf(s, callerOf(s, exec), args.session_id);
      return traceOf(session.id, args.seq);
    },
  });
}
