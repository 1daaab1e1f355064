// The session log tools (seed 000): `session_event_read`, `session_event_search`,
// `session_event_trace`, `session_search`, `session_trace`: read and search the durable log.
// A session here is an agent's log (its id is the agent's id); it stays readable after the agent
// is deleted (availability `persisted`, `live` while the agent exists). A child agent's session has
// its parent agent's as parent (workflow steps stay host requests inside their caller's session);
// `parent_session_ids` selects their children. Surfaces are `current` (the
// model's history) and `log-only` (inner calls, requests); nothing is `shadowed` here.
// Invariants: the tools never leave the calling agent's tenant (the search port takes the tenant,
// another tenant's session is NOT_FOUND); an agent whose policy says `sessions: "own"` reaches only
// its own session (DENIED otherwise); every result is bounded (hits, events, characters per event),
// large values stay payload markers. All five are read-only (the seed says so), so plan mode lets them run.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import type { EventLog, EventSearch, EventSearchQuery, SessionInfo } from '../../store/types.ts';
import { defineTool } from '../define.ts';
import type { AgentScope, ExecContext, ToolDefinition } from '../types.ts';
import { createSessionTraces } from './session-trace.ts';
import { eventHead, eventView, iso, nameOf, SESSION_LOG_LIMITS, snippetOf } from './session-view.ts';

export { SESSION_LOG_LIMITS };

/** Which sessions an agent's session tools reach: its tenant's (default) or its own only. */
export type SessionAccess = 'tenant' | 'own';

export interface SessionLogPort {
  events: Pick<EventLog, 'list' | 'flush'>;
  search: EventSearch;
  /** The agent's access (its policy's `sessions`). */
  accessOf(agent: AgentScope): SessionAccess;
}

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

export const sessionLogTools = (port: SessionLogPort): ToolDefinition[] => {
  const { eventAt, recentCalls, traceOf } = createSessionTraces(port.events);

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

  function hitView(query: string, hit: { sessionId: string; seq: number }) {
    const event = eventAt(hit.sessionId, hit.seq);
    if (event === undefined) return undefined;
    const name = nameOf(event);
    return {
      ...eventHead(event),
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
    isReadOnly: () => true,
    async execute(args, exec) {
      await port.events.flush();
      const session = sessionOf(callerOf(exec), args.session_id);
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
    isReadOnly: () => true,
    async execute(args, exec) {
      const caller = callerOf(exec);
      await port.events.flush();
      const session = sessionOf(caller, args.session_id);
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
    isReadOnly: () => true,
    async execute(args, exec) {
      await port.events.flush();
      const session = sessionOf(callerOf(exec), args.session_id);
      return traceOf(session.id, args.seq);
    },
  });

  const sessionSearch = defineTool({
    name: 'session_search',
    description:
      "Full-text search across your tenant's sessions (an agent's log is one session; deleted agents' logs stay searchable as `persisted`; a child agent's session has its parent's as parent): the sessions with matching events, newest hit first, at most 20 sessions and 3 hits each. Filters on sessions (ids, parents, creation time, availability) and on events (seq and time ranges, types, surfaces). With parent_session_ids, root sessions are searched only when include_root_sessions is true.",
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
    isReadOnly: () => true,
    async execute(args, exec) {
      const caller = callerOf(exec);
      // Roots are searched unless excluded and, with parent_session_ids, only when asked for;
      // child sessions unless parent_session_ids names other parents.
      const roots = args.include_root_sessions ?? args.parent_session_ids === undefined;
      const parents = args.parent_session_ids;
      let sessionIds = args.session_ids;
      if (parents !== undefined && !roots) {
        const chosen = port.search.children(caller.tenantId, parents);
        sessionIds = (sessionIds ?? chosen).filter((id) => chosen.includes(id));
      }
      const wanted = (info: SessionInfo | undefined): boolean =>
        info !== undefined &&
        (info.parentId === undefined ? roots : parents === undefined || parents.includes(info.parentId));
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
      const infos = new Map<string, SessionInfo | undefined>();
      for (const hit of hits) {
        if (!infos.has(hit.sessionId))
          infos.set(hit.sessionId, port.search.session(caller.tenantId, hit.sessionId));
        if (!wanted(infos.get(hit.sessionId))) continue;
        const group = grouped.get(hit.sessionId) ?? [];
        grouped.set(hit.sessionId, group);
        group.push(hit);
      }
      const sessions = [...grouped].slice(0, SESSION_LOG_LIMITS.sessions).map(([id, group]) => {
        const info = infos.get(id);
        return {
          session_id: id,
          ...(info === undefined
            ? {}
            : { created_at: iso(info.createdAt), availability: info.availability, last_seq: info.lastSeq }),
          parent_session_id: info?.parentId ?? null,
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
      'A session (your own unless session_id names another of your tenant) and its tree: its parent and children (the sessions of the child agents and teammates its agent made), its availability, and its most recent root calls with how many inner calls each made.',
    parameters: v.object({ session_id: v.optional(SessionId) }),
    output: { schema: v.unknown() },
    isConcurrencySafe: () => true,
    isReadOnly: () => true,
    async execute(args, exec) {
      await port.events.flush();
      const caller = callerOf(exec);
      const session = sessionOf(caller, args.session_id);
      return {
        session_id: session.id,
        created_at: iso(session.createdAt),
        availability: session.availability,
        last_seq: session.lastSeq,
        parent_session_id: session.parentId ?? null,
        children: port.search.children(caller.tenantId, [session.id]),
        recent_calls: recentCalls(session.id, session.lastSeq),
      };
    },
  });

  return [read, search, trace, sessionSearch, sessionTrace];
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
