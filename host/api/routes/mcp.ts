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
// POSTs hold a slot like every other request. The streams are mcp-streams.ts's.
import { randomUUID } from 'node:crypto';
import {
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  type ServerEventBus,
} from '@modelcontextprotocol/server';
import { type Context, Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type { AgentService } from '../../agents/service.ts';
import type { Agent } from '../../agents/types.ts';
import { isSandboxError } from '../../errors.ts';
import type { EventLog } from '../../store/types.ts';
import { jsonResponse, readJson } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import type { Lifecycle } from '../lifecycle.ts';
import { createTenantLimiter } from '../limits.ts';
import { batchRefusal } from '../mcp/batches.ts';
import { createInflightCalls } from '../mcp/cancels.ts';
import { onToolsChanged } from '../mcp/changes.ts';
import { originAdmitted } from '../mcp/origin.ts';
import { createResumableStreams } from '../mcp/resume.ts';
import { agentMcpServer } from '../mcp/server.ts';
import { ErrorBody } from '../schemas.ts';
import { loadAgent } from './agents.ts';
import {
  ANSWERS_PER_TENANT,
  answerPlace,
  changeStream,
  listenStream,
  type McpRoutesState,
  ownerOf,
  resumeStream,
  rpcError,
  streamPlace,
} from './mcp-streams.ts';

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

/** A single 2026-era `subscriptions/listen` request (a stream the client holds open). */
const isListen = (body: unknown): boolean =>
  typeof body === 'object' &&
  body !== null &&
  (body as { method?: unknown }).method === 'subscriptions/listen';

/**
 * Whether the answer starts with a priming event: an event with empty data, which clients before
 * 2025-11-25 may not take, so only for that revision on (the header, or initialize's own version).
 */
const primes = (header: string | undefined, body: unknown): boolean => {
  const version =
    header ??
    (isInitializeRequest(body)
      ? (body as { params: { protocolVersion?: string } }).params.protocolVersion
      : '');
  return typeof version === 'string' && version >= '2025-11-25' && version < '2026';
};

/** A single JSON-RPC notification (a method and no id). */
const isNotification = (body: unknown): boolean =>
  typeof body === 'object' && body !== null && !Array.isArray(body) && !('id' in body) && 'method' in body;

/** The handler's change-event bus, fed by this agent's tool-set changes; nothing publishes on it. */
const agentBus = (events: EventLog, agent: Agent): ServerEventBus => ({
  publish() {},
  subscribe: (listener) => onToolsChanged(events, agent, () => listener({ kind: 'tools_list_changed' })),
});
/** A POST (or DELETE) to the endpoint, served by a fresh SDK handler; a GET opens the change stream. */
async function serveMcp(state: McpRoutesState, c: Context<ApiEnv>): Promise<Response> {
  const { agents, events, inflight } = state;
  const agent = c.get('agent');
  if (c.req.method === 'GET') {
    const lastEventId = c.req.header('last-event-id');
    return lastEventId === undefined
      ? changeStream(state, c, agent)
      : resumeStream(state, c, agent, lastEventId);
  }
  let parsedBody: unknown;
  if (c.req.method === 'POST') {
    // The API's one JSON reader: invalid UTF-8 is refused, never rewritten to U+FFFD, and no
    // `__proto__`, `constructor` or `prototype` key reaches a tool (body.ts).
    try {
      parsedBody = await readJson(c.req.raw);
    } catch (error) {
      if (!isSandboxError(error) || error.code !== 'MALFORMED_JSON') throw error;
      return c.json(rpcError(-32700, `Parse error: ${error.message}`), 400);
    }
    // Batches only in the revision that has them, and no bigger than a POST /calls batch.
    const refused = batchRefusal(parsedBody, c.req.header('mcp-protocol-version'));
    if (refused !== undefined) return c.json(rpcError(-32600, refused), 400);
  }
  // A listen stream lives as long as its client: it gives its request slot back and takes a
  // stream place instead, as the GET stream does.
  const place = isListen(parsedBody) ? streamPlace(state, agent) : undefined;
  if (place !== undefined) c.get('releaseSlot')?.();
  const session = c.req.header('mcp-session-id');
  // A 2025-era request outlives its connection (see the header): the SDK gets a copy of it that
  // only the service's shutdown aborts, and so does the call.
  const legacy =
    c.req.method === 'POST' && place === undefined && (await isLegacyRequest(c.req.raw, parsedBody));
  // An answer that runs on after its client went still counts: a tenant has at most
  // ANSWERS_PER_TENANT of them running, connected or not (a 2026-era request ends with its client).
  // Notifications (a cancel among them) answer at once and always get through.
  const answering = legacy && !isNotification(parsedBody) ? answerPlace(state, agent) : undefined;
  const request = legacy
    ? new Request(c.req.raw.url, {
        method: 'POST',
        headers: c.req.raw.headers,
        signal: state.lifecycle.signal,
      })
    : c.req.raw;
  const handler = createMcpHandler(
    () =>
      agentMcpServer({
        agents,
        agent,
        version: state.version,
        inflight,
        session,
        signal: request.signal,
        callTimeoutMs: state.callTimeoutMs,
      }),
    { bus: agentBus(events, agent) },
  );
  let response: Response;
  try {
    response = await handler.fetch(request, parsedBody === undefined ? {} : { parsedBody });
  } catch (error) {
    place?.();
    answering?.();
    throw error;
  }
  if (place !== undefined) return listenStream(state, c, agent, response, place);
  if (legacy && (response.headers.get('content-type') ?? '').startsWith('text/event-stream'))
    response = state.resumable.record(ownerOf(agent), response, {
      priming: primes(c.req.header('mcp-protocol-version'), parsedBody),
      ...(answering === undefined ? {} : { onEnd: answering }),
    });
  else answering?.();
  if (session !== undefined || !response.ok || !isInitializeRequest(parsedBody)) return response;
  const stamped = new Response(response.body, response);
  stamped.headers.set('mcp-session-id', randomUUID());
  return stamped;
}

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
