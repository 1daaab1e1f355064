// The tools across sessions: `session_search` (full-text across the tenant's sessions, grouped by
// session, filtered on sessions and on events) and `session_trace` (a session and its tree: parent,
// children, availability and its recent root calls).
// Invariants: only sessions of the caller's tenant, and with `sessions: "own"` only its own; roots
// are searched unless excluded and, with parent_session_ids, only when asked for; at most
// SESSION_LOG_LIMITS.sessions sessions and hitsPerSession hits each, `more` when the scan was full.
import * as v from 'valibot';
import type { SessionInfo } from '../../store/types.ts';
import { defineTool } from '../define.ts';
import {
  Availability,
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
  timeOf,
} from './session-log-access.ts';
import { iso, SESSION_LOG_LIMITS } from './session-view.ts';

/** session_search */
export function sessionSearchTool(s: SessionLogState) {
  const { port } = s;
  return defineTool({
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
      const caller = callerOf(s, exec);
      // Roots are searched unless excluded and, with parent_session_ids, only when asked for;
      // child sessions unless parent_session_ids names other parents.
      const roots = args.include_root_sessions ?? args.parent_session_ids === undefined;
      const parents = args.parent_session_ids;
      let sessionIds = args.session_ids;
      if (parents !== undefined && !roots) {
        const chosen = await port.search.children(caller.tenantId, parents);
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
      const hits = await port.search.search({
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
      // Each session read once, all together, before the hits are grouped.
      const ids = [...new Set(hits.map((hit) => hit.sessionId))];
      const loaded = await Promise.all(ids.map((id) => port.search.session(caller.tenantId, id)));
      const infos = new Map<string, SessionInfo | undefined>(ids.map((id, i) => [id, loaded[i]]));
      for (const hit of hits) {
        if (!wanted(infos.get(hit.sessionId))) continue;
        const group = grouped.get(hit.sessionId) ?? [];
        grouped.set(hit.sessionId, group);
        group.push(hit);
      }
      const shown = [...grouped].slice(0, SESSION_LOG_LIMITS.sessions);
      const views = await Promise.all(
        shown.map(([, group]) => hitViews(s, args.query, group.slice(0, SESSION_LOG_LIMITS.hitsPerSession))),
      );
      const sessions = shown.map(([id, group], i) => {
        const info = infos.get(id);
        return {
          session_id: id,
          ...(info === undefined
            ? {}
            : { created_at: iso(info.createdAt), availability: info.availability, last_seq: info.lastSeq }),
          parent_session_id: info?.parentId ?? null,
          matches: group.length,
          hits: views[i] ?? [],
        };
      });
      return { sessions, ...(hits.length >= SESSION_LOG_LIMITS.scan ? { more: true } : {}) };
    },
  });
}

/** session_trace */
export function sessionTraceTool(s: SessionLogState) {
  const { port } = s;
  const { recentCalls } = s.traces;
  return defineTool({
    name: 'session_trace',
    description:
      'A session (your own unless session_id names another of your tenant) and its tree: its parent and children (the sessions of the child agents and teammates its agent made), its availability, and its most recent root calls with how many inner calls each made.',
    parameters: v.object({ session_id: v.optional(SessionId) }),
    output: { schema: v.unknown() },
    isConcurrencySafe: () => true,
    isReadOnly: () => true,
    async execute(args, exec) {
      await port.events.flush();
      const caller = callerOf(s, exec);
      const session = await sessionOf(s, caller, args.session_id);
      return {
        session_id: session.id,
        created_at: iso(session.createdAt),
        availability: session.availability,
        last_seq: session.lastSeq,
        parent_session_id: session.parentId ?? null,
        children: await port.search.children(caller.tenantId, [session.id]),
        recent_calls: await recentCalls(session.id, session.lastSeq),
      };
    },
  });
}
