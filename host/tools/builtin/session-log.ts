// The session log tools (seed 000): `session_event_read`, `session_event_search`,
// `session_event_trace`, `session_search`, `session_trace`: read and search the durable log.
// A session here is an agent's log (its id is the agent's id); it stays readable after the agent
// is deleted (availability `persisted`, `live` while the agent exists). A child agent's session has
// its parent agent's as parent (workflow steps stay host requests inside their caller's session);
// `parent_session_ids` selects their children. Surfaces are `current` (the
// model's history) and `log-only` (inner calls, requests); nothing is `shadowed` here.
// This module wires the parts: session-log-access.ts (the port, the caller, the session a call
// names, the filters), session-log-events.ts (the three tools on one session's events) and
// session-log-sessions.ts (session_search, session_trace).
// Invariants: the tools never leave the calling agent's tenant (the search port takes the tenant,
// another tenant's session is NOT_FOUND); an agent whose policy says `sessions: "own"` reaches only
// its own session (DENIED otherwise); every result is bounded (hits, events, characters per event),
// large values stay payload markers. All five are read-only (the seed says so), so plan mode lets them run.
import type { ToolDefinition } from '../types.ts';
import type { SessionLogPort, SessionLogState } from './session-log-access.ts';
import { readTool, searchTool, traceTool } from './session-log-events.ts';
import { sessionSearchTool, sessionTraceTool } from './session-log-sessions.ts';
import { createSessionTraces } from './session-trace.ts';
import { SESSION_LOG_LIMITS } from './session-view.ts';

export type { SessionAccess, SessionLogPort } from './session-log-access.ts';
export { SESSION_LOG_LIMITS };

export const sessionLogTools = (port: SessionLogPort): ToolDefinition[] => {
  const s: SessionLogState = { port, traces: createSessionTraces(port.events) };
  return [readTool(s), searchTool(s), traceTool(s), sessionSearchTool(s), sessionTraceTool(s)];
};
