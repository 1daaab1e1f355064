// The session log tools (seed 000): `session_event_read`, `session_event_search`,
// `session_event_trace`, `session_search`, `session_trace`: read and search the durable log.
// A session here is an agent's log (its id is the agent's id); it stays readable after the agent
// is deleted (availability `persisted`, `live` while the agent exists). Sessions have no parents or
// children today (subagents and workflow steps are host requests inside their caller's session),
// so every session is a root and `parent_session_ids` selects nothing. Surfaces are `current` (the
// model's history) and `log-only` (inner calls, requests); nothing is `shadowed` here.
// Invariants: the tools never leave the calling agent's tenant (the search port takes the tenant,
// another tenant's session is NOT_FOUND); an agent whose policy says `sessions: "own"` reaches only
// its own session (DENIED otherwise); every result is bounded (hits, events, characters per event),
// large values stay payload markers.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import type { JsonValue } from '../../json.ts';
import type {
  EventLog,
  EventSearch,
  EventSearchQuery,
  SessionEvent,
  SessionInfo,
} from '../../store/types.ts';
import { defineTool } from '../define.ts';
import type { AgentScope, ExecContext, ToolDefinition } from '../types.ts';

/** Which sessions an agent's session tools reach: its tenant's (default) or its own only. */
export type SessionAccess = 'tenant' | 'own';

export interface SessionLogPort {
  events: Pick<EventLog, 'list' | 'flush'>;
  search: EventSearch;
  /** The agent's access (its policy's `sessions`). */
  accessOf(agent: AgentScope): SessionAccess;
}

export const SESSION_LOG_LIMITS = {
  /** Hits session_event_search returns. */
  hits: 20,
  /** Sessions session_search returns, and hits shown per session. */
  sessions: 20,
  hitsPerSession: 3,
  /** Hits session_search looks through to group them by session. */
  scan: 200,
  /** Events session_event_read shows on each side of the one asked for. */
  around: 20,
  /** Characters of one event's data shown before it is cut to a preview. */
  eventChars: 4000,
  /** Events a trace shows, and events it reads looking for them. */
  traceEvents: 200,
  traceScan: 20_000,
  /** Characters of a hit's snippet. */
  snippet: 240,
} as const;

const Surface = v.picklist(['current', 'shadowed', 'log-only']);
const Availability = v.picklist(['live', 'persisted']);
const SessionId = v.pipe(v.string(), v.minLength(1), v.maxLength(128));
const Seq = v.pipe(v.number(), v.integer(), v.minValue(0));
const Time = v.pipe(v.string(), v.maxLength(64), v.description('ISO 8601 time'));
const Types = v.pipe(v.array(v.pipe(v.string(), v.maxLength(64))), v.maxLength(32));
const Query = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxLength(1000),
  v.description('Words that must all occur'),
);

interface Caller {
  tenantId: string;
  own: string;
  access: SessionAccess;
}

const iso = (t: number): string => new Date(t).toISOString();

const timeOf = (name: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const t = Date.parse(text);
  if (Number.isNaN(t))
    throw new SandboxError(
      'INVALID_ARGUMENTS',
      `${name} is not an ISO 8601 time (e.g. 2026-08-21T09:00:00Z).`,
    );
  return t;
};

/** An event's data as shown: whole when short, else a preview of its JSON. */
const shownData = (data: JsonValue, max: number): JsonValue => {
  const json = JSON.stringify(data) ?? 'null';
  return json.length <= max ? data : { truncated: true, chars: json.length, preview: json.slice(0, max) };
};

const eventView = (event: SessionEvent, max: number = SESSION_LOG_LIMITS.eventChars) => ({
  session_id: event.sessionId,
  seq: event.seq,
  type: event.type,
  surface: event.surface,
  at: iso(event.at),
  ...(event.callId === undefined ? {} : { call_id: event.callId }),
  ...(event.parentCallId === undefined ? {} : { parent_call_id: event.parentCallId }),
  data: shownData(event.data, max),
  ...(event.payloads === undefined ? {} : { payloads: event.payloads.length }),
});

/** The words of an event, flattened, for a snippet. */
const wordsOf = (value: unknown, out: string[], budget: { left: number }): void => {
  if (budget.left <= 0) return;
  if (typeof value === 'string') {
    out.push(value);
    budget.left -= value.length;
  } else if (Array.isArray(value)) for (const item of value) wordsOf(item, out, budget);
  else if (value !== null && typeof value === 'object')
    for (const item of Object.values(value)) wordsOf(item, out, budget);
};

/** Up to SESSION_LOG_LIMITS.snippet characters around the first query term found in the event. */
const snippetOf = (event: SessionEvent, query: string): string => {
  const words: string[] = [];
  wordsOf(event.data, words, { left: 64 * 1024 });
  const text = words.join(' ').replace(/\s+/g, ' ');
  const lower = text.toLowerCase();
  const term = query.split(/\s+/).find((t) => t !== '' && lower.includes(t.toLowerCase()));
  const at = term === undefined ? 0 : lower.indexOf(term.toLowerCase());
  const half = SESSION_LOG_LIMITS.snippet / 2;
  const from = Math.max(0, at - half);
  return `${from > 0 ? '…' : ''}${text.slice(from, from + SESSION_LOG_LIMITS.snippet)}${from + SESSION_LOG_LIMITS.snippet < text.length ? '…' : ''}`;
};

const nameOf = (event: SessionEvent): string | undefined => {
  const data = event.data as { name?: unknown } | null;
  return typeof data === 'object' && data !== null && typeof data.name === 'string' ? data.name : undefined;
};

export const sessionLogTools = (port: SessionLogPort): ToolDefinition[] => {
  function callerOf(exec: ExecContext): Caller {
    const tenantId = exec.agent.services.tenantId;
    if (typeof tenantId !== 'string')
      throw new SandboxError(
        'SANDBOX_UNAVAILABLE',
        'The session tools need an agent created through the agent service.',
      );
    return { tenantId, own: exec.agent.sessionId, access: port.accessOf(exec.agent) };
  }

  /** The session a call names (its own when none), checked against tenant and policy. */
  function sessionOf(caller: Caller, id: string | undefined): SessionInfo {
    const sessionId = id ?? caller.own;
    if (sessionId !== caller.own && caller.access === 'own')
      throw new SandboxError(
        'DENIED',
        "This agent's policy limits the session tools to its own session; omit session_id.",
      );
    const info = port.search.session(caller.tenantId, sessionId);
    if (info === undefined)
      throw new SandboxError(
        'NOT_FOUND',
        `No session ${sessionId}; session_search lists the sessions you can read.`,
      );
    return info;
  }

  /** The event at `seq` of a session, large values as markers. */
  function eventAt(sessionId: string, seq: number): SessionEvent | undefined {
    return port.events
      .list(sessionId, { afterSeq: seq - 1, limit: 1, payloads: 'refs' })
      .find((e) => e.seq === seq);
  }

  function hitView(query: string, hit: { sessionId: string; seq: number }) {
    const event = eventAt(hit.sessionId, hit.seq);
    if (event === undefined) return undefined;
    const name = nameOf(event);
    return {
      session_id: event.sessionId,
      seq: event.seq,
      type: event.type,
      surface: event.surface,
      at: iso(event.at),
      ...(event.callId === undefined ? {} : { call_id: event.callId }),
      ...(name === undefined ? {} : { name }),
      snippet: snippetOf(event, query),
    };
  }

  const read = defineTool({
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
    async execute(args, exec) {
      const session = sessionOf(callerOf(exec), args.session_id);
      await port.events.flush();
      const before = Math.min(args.before ?? 0, SESSION_LOG_LIMITS.around);
      const after = Math.min(args.after ?? 0, SESSION_LOG_LIMITS.around);
      const from = Math.max(0, args.seq - before - 1);
      const events = port.events
        .list(session.id, { afterSeq: from, limit: args.seq - from + after, payloads: 'refs' })
        .filter((e) => e.seq <= args.seq + after);
      if (!events.some((e) => e.seq === args.seq))
        throw new SandboxError(
          'NOT_FOUND',
          `Session ${session.id} has no event ${args.seq}; its last is ${session.lastSeq}.`,
        );
      return { session_id: session.id, events: events.map((e) => eventView(e)) };
    },
  });

  const search = defineTool({
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
    async execute(args, exec) {
      const caller = callerOf(exec);
      const session = sessionOf(caller, args.session_id);
      await port.events.flush();
      const hits = port.search.search({
        tenantId: caller.tenantId,
        query: args.query,
        sessionIds: [session.id],
        ...eventFilters(args),
        limit: SESSION_LOG_LIMITS.hits,
      });
      return { session_id: session.id, hits: hits.flatMap((hit) => hitView(args.query, hit) ?? []) };
    },
  });

  const trace = defineTool({
    name: 'session_event_trace',
    description:
      "An event's causal chain in its session: the root call it belongs to, the inner calls programs and workflows made under it (with their depth), their requests and results, in log order (at most 200 events).",
    parameters: v.object({ session_id: v.optional(SessionId), seq: Seq }),
    output: { schema: v.unknown() },
    isConcurrencySafe: () => true,
    async execute(args, exec) {
      const session = sessionOf(callerOf(exec), args.session_id);
      await port.events.flush();
      return traceOf(session.id, args.seq);
    },
  });

  const sessionSearch = defineTool({
    name: 'session_search',
    description:
      "Full-text search across your tenant's sessions (an agent's log is one session; deleted agents' logs stay searchable as `persisted`): the sessions with matching events, newest hit first, at most 20 sessions and 3 hits each. Filters on sessions (ids, creation time, availability) and on events (seq and time ranges, types, surfaces). Sessions have no parents today: every session is a root.",
    parameters: v.object({
      query: Query,
      session_ids: v.optional(v.pipe(v.array(SessionId), v.maxLength(100))),
      created_at_from: v.optional(Time),
      created_at_to: v.optional(Time),
      parent_session_ids: v.optional(v.pipe(v.array(SessionId), v.maxLength(100))),
      include_root_sessions: v.optional(v.boolean()),
      availability: v.optional(v.pipe(v.array(Availability), v.maxLength(2))),
      event_seq_from: v.optional(Seq),
      event_seq_to: v.optional(Seq),
      event_time_from: v.optional(Time),
      event_time_to: v.optional(Time),
      event_types: v.optional(Types),
      event_surfaces: v.optional(v.pipe(v.array(Surface), v.maxLength(3))),
    }),
    output: { schema: v.object({ sessions: v.array(v.unknown()) }) },
    isConcurrencySafe: () => true,
    async execute(args, exec) {
      const caller = callerOf(exec);
      // Every session is a root: none is the child of a parent_session_ids entry.
      if (args.include_root_sessions === false) return { sessions: [] };
      let sessionIds = args.session_ids;
      if (caller.access === 'own')
        sessionIds = (sessionIds ?? [caller.own]).filter((id) => id === caller.own);
      await port.events.flush();
      const createdFrom = timeOf('created_at_from', args.created_at_from);
      const createdTo = timeOf('created_at_to', args.created_at_to);
      const hits = port.search.search({
        tenantId: caller.tenantId,
        query: args.query,
        ...(sessionIds === undefined ? {} : { sessionIds }),
        ...eventFilters({
          seq_from: args.event_seq_from,
          seq_to: args.event_seq_to,
          time_from: args.event_time_from,
          time_to: args.event_time_to,
          event_types: args.event_types,
          surfaces: args.event_surfaces,
        }),
        ...(createdFrom === undefined ? {} : { createdFrom }),
        ...(createdTo === undefined ? {} : { createdTo }),
        ...(args.availability === undefined ? {} : { availability: args.availability }),
        limit: SESSION_LOG_LIMITS.scan,
      });
      const grouped = new Map<string, typeof hits>();
      for (const hit of hits) {
        const group = grouped.get(hit.sessionId) ?? [];
        grouped.set(hit.sessionId, group);
        group.push(hit);
      }
      const sessions = [...grouped].slice(0, SESSION_LOG_LIMITS.sessions).map(([id, group]) => {
        const info = port.search.session(caller.tenantId, id);
        return {
          session_id: id,
          ...(info === undefined
            ? {}
            : { created_at: iso(info.createdAt), availability: info.availability, last_seq: info.lastSeq }),
          parent_session_id: null,
          matches: group.length,
          hits: group
            .slice(0, SESSION_LOG_LIMITS.hitsPerSession)
            .flatMap((hit) => hitView(args.query, hit) ?? []),
        };
      });
      return { sessions, ...(hits.length >= SESSION_LOG_LIMITS.scan ? { more: true } : {}) };
    },
  });

  const sessionTrace = defineTool({
    name: 'session_trace',
    description:
      'A session (your own unless session_id names another of your tenant) and its tree: its parent and children (none today: every session is a root), its availability, and its most recent root calls with how many inner calls each made.',
    parameters: v.object({ session_id: v.optional(SessionId) }),
    output: { schema: v.unknown() },
    isConcurrencySafe: () => true,
    async execute(args, exec) {
      const session = sessionOf(callerOf(exec), args.session_id);
      await port.events.flush();
      return {
        session_id: session.id,
        created_at: iso(session.createdAt),
        availability: session.availability,
        last_seq: session.lastSeq,
        parent_session_id: null,
        children: [],
        recent_calls: recentCalls(session.id, session.lastSeq),
      };
    },
  });

  /** The root calls among the session's last events, newest last. */
  function recentCalls(sessionId: string, lastSeq: number) {
    const window = 1000;
    const events = port.events.list(sessionId, {
      afterSeq: Math.max(0, lastSeq - window),
      limit: window,
      payloads: 'refs',
    });
    const calls = new Map<
      string,
      { call_id: string; name?: string; seq: number; inner_calls: number; ok?: boolean }
    >();
    const rootOf = new Map<string, string>();
    for (const e of events) {
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
  function traceOf(sessionId: string, seq: number) {
    const target = eventAt(sessionId, seq);
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
      const page = port.events.list(sessionId, { afterSeq: from, limit: end - from, payloads: 'refs' });
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
    const rootEvent = eventAt(sessionId, rootSeq)!;
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
      const page = port.events.list(sessionId, { afterSeq: after, limit: 200, payloads: 'refs' });
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

  return [read, search, trace, sessionSearch, sessionTrace];
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

/** The event filters common to both searches, from the seed's argument names. */
const eventFilters = (args: {
  seq_from?: number | undefined;
  seq_to?: number | undefined;
  time_from?: string | undefined;
  time_to?: string | undefined;
  event_types?: string[] | undefined;
  surfaces?: string[] | undefined;
}): Partial<EventSearchQuery> => {
  const timeFrom = timeOf('time_from', args.time_from);
  const timeTo = timeOf('time_to', args.time_to);
  return {
    ...(args.seq_from === undefined ? {} : { seqFrom: args.seq_from }),
    ...(args.seq_to === undefined ? {} : { seqTo: args.seq_to }),
    ...(timeFrom === undefined ? {} : { timeFrom }),
    ...(timeTo === undefined ? {} : { timeTo }),
    ...(args.event_types === undefined ? {} : { types: args.event_types }),
    ...(args.surfaces === undefined ? {} : { surfaces: args.surfaces }),
  };
};
