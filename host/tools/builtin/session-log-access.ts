// What the session log tools share (session-log.ts wires them): the port they read through, the
// argument shapes of the seed, who the caller is and which session a call names, a hit's view, and
// the event filters common to both searches.
// Invariants: the tools never leave the calling agent's tenant (the search port takes the tenant,
// another tenant's session is NOT_FOUND); an agent whose policy says `sessions: "own"` reaches only
// its own session (DENIED otherwise); a time argument that is not ISO 8601 is INVALID_ARGUMENTS.
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import type { EventLog, EventSearch, EventSearchQuery, SessionInfo } from '../../store/types.ts';
import type { AgentScope, ExecContext } from '../types.ts';
import type { createSessionTraces } from './session-trace.ts';
import { eventHead, nameOf, snippetOf } from './session-view.ts';

/** Which sessions an agent's session tools reach: its tenant's (default) or its own only. */
export type SessionAccess = 'tenant' | 'own';

export interface SessionLogPort {
  events: Pick<EventLog, 'list' | 'flush'>;
  search: EventSearch;
  /** The agent's access (its policy's `sessions`). */
  accessOf(agent: AgentScope): SessionAccess;
}

/** One set of session log tools' state: the port and the traces read through it. */
export interface SessionLogState {
  port: SessionLogPort;
  traces: ReturnType<typeof createSessionTraces>;
}

export const Surface = v.picklist(['current', 'shadowed', 'log-only']);
export const Availability = v.picklist(['live', 'persisted']);
export const SessionId = v.pipe(v.string(), v.minLength(1), v.maxLength(128));
export const Seq = v.pipe(v.number(), v.integer(), v.minValue(0));
export const Time = v.pipe(v.string(), v.maxLength(64), v.description('ISO 8601 time'));
export const Types = v.pipe(v.array(v.pipe(v.string(), v.maxLength(64))), v.maxLength(32));
export const Query = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxLength(1000),
  v.description('Words that must all occur'),
);

export interface Caller {
  tenantId: string;
  own: string;
  access: SessionAccess;
}

export const timeOf = (name: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const t = Date.parse(text);
  if (Number.isNaN(t))
    throw new SandboxError(
      'INVALID_ARGUMENTS',
      `${name} is not an ISO 8601 time (e.g. 2026-08-21T09:00:00Z).`,
    );
  return t;
};

export function callerOf(s: SessionLogState, exec: ExecContext): Caller {
  const tenantId = exec.agent.services.tenantId;
  if (typeof tenantId !== 'string')
    throw new SandboxError(
      'SANDBOX_UNAVAILABLE',
      'The session tools need an agent created through the agent service.',
    );
  return { tenantId, own: exec.agent.sessionId, access: s.port.accessOf(exec.agent) };
}

/** The session a call names (its own when none), checked against tenant and policy. */
export async function sessionOf(
  s: SessionLogState,
  caller: Caller,
  id: string | undefined,
): Promise<SessionInfo> {
  const sessionId = id ?? caller.own;
  if (sessionId !== caller.own && caller.access === 'own')
    throw new SandboxError(
      'DENIED',
      "This agent's policy limits the session tools to its own session; omit session_id.",
    );
  const info = await s.port.search.session(caller.tenantId, sessionId);
  if (info === undefined)
    throw new SandboxError(
      'NOT_FOUND',
      `No session ${sessionId}; session_search lists the sessions you can read.`,
    );
  return info;
}

export async function hitView(s: SessionLogState, query: string, hit: { sessionId: string; seq: number }) {
  const event = await s.traces.eventAt(hit.sessionId, hit.seq);
  if (event === undefined) return undefined;
  const name = nameOf(event);
  return {
    ...eventHead(event),
    ...(name === undefined ? {} : { name }),
    snippet: snippetOf(event, query),
  };
}

/** The views of `hits` (read together), those whose event is gone left out. */
export async function hitViews(
  s: SessionLogState,
  query: string,
  hits: readonly { sessionId: string; seq: number }[],
) {
  const views = await Promise.all(hits.map((hit) => hitView(s, query, hit)));
  return views.filter((view) => view !== undefined);
}

/** The event filters common to both searches, from the seed's argument names. */
export const eventFilters = (args: {
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
