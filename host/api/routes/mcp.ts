// /v1/agents/:id/mcp: the agent as an MCP server over Streamable HTTP (./../mcp/server.ts), for
// 2026-07-28 clients and for the 2025-era revisions most clients still speak, with the tenant's
// bearer key like the rest of v1 (another tenant's agent is 404).
// Stateless on purpose: every POST is served by a fresh SDK server instance (createMcpHandler),
// so any control-plane replica can answer any request, nothing is held between requests, and
// there is no session table to cap or expire. What sessions would have carried is kept without
// them: a 2025-era initialize gets a random Mcp-Session-Id that nobody stores (the client echoes
// it; it only keeps two clients' request ids apart for cancellation, see ../mcp/cancels.ts), and
// the 2025-era standalone GET stream, which a stateless SDK handler refuses, is served here as a
// stream of `notifications/tools/list_changed` fed by the agent's log. 2026-era clients get the
// same notifications on their `subscriptions/listen` stream through the handler's event bus.
// JSON-RPC batches only in 2025-03-26, the one revision that had them, and at most 64 messages
// (../mcp/batches.ts).
// A 2025-era POST answered as an SSE stream carries event ids (and, from 2025-11-25, a priming event)
// and is read to its end whatever becomes of the client's connection: a client that lost it sends a
// GET with Last-Event-ID and gets the rest (../mcp/resume.ts). So a dropped 2025-era connection no
// longer cancels its call (the transport spec: disconnection is not cancellation); the client's
// `notifications/cancelled` does, and the call's deadline. A 2026-era request is cancelled by closing it.
// Bounds: a notification stream — the 2025-era GET, or a 2026-era `subscriptions/listen` POST —
// holds no tenant request slot (clients keep it open for as long as they are connected) but counts
// against `streamsPerTenant`, and ends when the agent is deleted or the service shuts down; other
// POSTs hold a slot like every other request. The streams are mcp-streams.ts's; the exchange, with
// the MCP SDK's server, is mcp-serve.ts's, imported at the first request.
import { type Context, Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type { AgentService } from '../../agents/service.ts';
import type { EventLog } from '../../store/types.ts';
import { jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import type { Lifecycle } from '../lifecycle.ts';
import { createTenantLimiter } from '../limits.ts';
import { createInflightCalls } from '../mcp/cancels.ts';
import { originAdmitted } from '../mcp/origin.ts';
import { createResumableStreams } from '../mcp/resume.ts';
import { ErrorBody } from '../schemas.ts';
import { loadAgent } from './agents.ts';
import { ANSWERS_PER_TENANT, type McpRoutesState, rpcError } from './mcp-streams.ts';

export interface McpRouteOptions {
  agents: AgentService;
  events: EventLog;
  lifecycle: Lifecycle;
  /** Reported as serverInfo.version. */
  version: string;
  /** Deadline of one tools/call (ApiLimits.callTimeoutMs). */
  callTimeoutMs: number;
  /** Browser origins admitted besides this machine's own (DSH_MCP_ORIGINS, ../mcp/origin.ts). */
  origins?: readonly string[];
  /** Open 2025-era notification streams (GET) of one tenant. Default 32. */
  streamsPerTenant?: number;
}

/** The 2025-era standalone notification stream: long-lived, so it takes no tenant request slot. */
export const isMcpStream = (method: string, path: string): boolean =>
  method === 'GET' && path.endsWith('/mcp');

let serving: Promise<typeof import('./mcp-serve.ts')> | undefined;
/**
 * The exchange (mcp-serve.ts, with the MCP SDK's server): imported at the first MCP request, once
 * for all of them (concurrent first requests share the one import); a failed import fails the
 * request like any other error of its handler.
 */
const loadServe = (): Promise<typeof import('./mcp-serve.ts')> => (serving ??= import('./mcp-serve.ts'));
const serveMcp = async (state: McpRoutesState, c: Context<ApiEnv>): Promise<Response> =>
  (await loadServe()).serveMcp(state, c);

export const mcpRoutes = (options: McpRouteOptions): Hono<ApiEnv> => {
  const { agents, events, lifecycle } = options;
  const state: McpRoutesState = {
    agents,
    events,
    lifecycle,
    version: options.version,
    callTimeoutMs: options.callTimeoutMs,
    streamsPerTenant: options.streamsPerTenant,
    inflight: createInflightCalls(),
    resumable: createResumableStreams(),
    answers: createTenantLimiter(ANSWERS_PER_TENANT),
    streams: createTenantLimiter(options.streamsPerTenant ?? 32),
    origins: new Set(options.origins ?? []),
  };
  const { origins } = state;
  const app = new Hono<ApiEnv>();

  app.on(
    ['GET', 'POST', 'DELETE'],
    '/v1/agents/:id/mcp',
    describeRoute({
      operationId: 'mcp',
      tags: ['mcp'],
      description:
        "The agent as an MCP server (Streamable HTTP; protocol 2026-07-28 and the 2025 revisions): tools/list is the agent's model-facing set, tools/call runs through the same pipeline as POST /calls. GET opens the 2025-era notification stream (tools/list_changed), or with Last-Event-ID resumes a 2025-era POST's answer after that event.",
      responses: {
        200: { description: 'JSON-RPC response (application/json or text/event-stream)' },
        403: { description: 'A browser Origin that is neither this machine nor listed in DSH_MCP_ORIGINS' },
        404: jsonResponse(
          'No such agent (or, for a GET with Last-Event-ID, no such stream of it: a JSON-RPC error)',
          ErrorBody,
        ),
      },
    }),
    async (c, next) => {
      const origin = c.req.header('origin');
      if (originAdmitted(origin, origins)) return next();
      return c.json(
        rpcError(
          -32000,
          `Forbidden: the Origin ${JSON.stringify(origin)} may not use this MCP endpoint (DSH_MCP_ORIGINS lists the admitted browser origins).`,
        ),
        403,
      );
    },
    loadAgent(agents),
    (c) => serveMcp(state, c),
  );
  return app;
};
