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
// Bounds: a notification stream — the 2025-era GET, or a 2026-era `subscriptions/listen` POST —
// holds no tenant request slot (clients keep it open for as long as they are connected) but counts
// against `streamsPerTenant`, and ends when the agent is deleted or the service shuts down; other
// POSTs hold a slot like every other request.
import { randomUUID } from 'node:crypto';
import { createMcpHandler, isInitializeRequest, type ServerEventBus } from '@modelcontextprotocol/server';
import { type Context, Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type { AgentService } from '../../agents/service.ts';
import type { Agent } from '../../agents/types.ts';
import { isSandboxError, SandboxError } from '../../errors.ts';
import type { EventLog } from '../../store/types.ts';
import { jsonResponse, readJson } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import type { Lifecycle } from '../lifecycle.ts';
import { createTenantLimiter } from '../limits.ts';
import { batchRefusal } from '../mcp/batches.ts';
import { createInflightCalls } from '../mcp/cancels.ts';
import { onToolsChanged } from '../mcp/changes.ts';
import { originAdmitted } from '../mcp/origin.ts';
import { agentMcpServer } from '../mcp/server.ts';
import { relay } from '../relay.ts';
import { ErrorBody } from '../schemas.ts';
import { countedSSE } from '../sse.ts';
import { loadAgent } from './agents.ts';

const HEARTBEAT_MS = 15_000;
const LIST_CHANGED = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });

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

/** A JSON-RPC error outside any request (the shape MCP clients read from a failed POST). */
const rpcError = (code: number, message: string) => ({ jsonrpc: '2.0', error: { code, message }, id: null });

/** A single 2026-era `subscriptions/listen` request (a stream the client holds open). */
const isListen = (body: unknown): boolean =>
  typeof body === 'object' &&
  body !== null &&
  (body as { method?: unknown }).method === 'subscriptions/listen';

/** The handler's change-event bus, fed by this agent's tool-set changes; nothing publishes on it. */
const agentBus = (events: EventLog, agent: Agent): ServerEventBus => ({
  publish() {},
  subscribe: (listener) => onToolsChanged(events, agent, () => listener({ kind: 'tools_list_changed' })),
});

export const mcpRoutes = (options: McpRouteOptions): Hono<ApiEnv> => {
  const { agents, events, lifecycle } = options;
  const inflight = createInflightCalls();
  const streams = createTenantLimiter(options.streamsPerTenant ?? 32);
  const origins = new Set(options.origins ?? []);
  const app = new Hono<ApiEnv>();

  app.on(
    ['GET', 'POST', 'DELETE'],
    '/v1/agents/:id/mcp',
    describeRoute({
      operationId: 'mcp',
      tags: ['mcp'],
      description:
        "The agent as an MCP server (Streamable HTTP; protocol 2026-07-28 and the 2025 revisions): tools/list is the agent's model-facing set, tools/call runs through the same pipeline as POST /calls. GET opens the 2025-era notification stream (tools/list_changed).",
      responses: {
        200: { description: 'JSON-RPC response (application/json or text/event-stream)' },
        403: { description: 'A browser Origin that is neither this machine nor listed in DSH_MCP_ORIGINS' },
        404: jsonResponse('No such agent', ErrorBody),
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
    async (c) => {
      const agent = c.get('agent');
      if (c.req.method === 'GET') return changeStream(c, agent);
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
      const place = isListen(parsedBody) ? streamPlace(agent) : undefined;
      if (place !== undefined) c.get('releaseSlot')?.();
      const session = c.req.header('mcp-session-id');
      const handler = createMcpHandler(
        () =>
          agentMcpServer({
            agents,
            agent,
            version: options.version,
            inflight,
            session,
            signal: c.req.raw.signal,
            callTimeoutMs: options.callTimeoutMs,
          }),
        { bus: agentBus(events, agent) },
      );
      let response: Response;
      try {
        response = await handler.fetch(c.req.raw, parsedBody === undefined ? {} : { parsedBody });
      } catch (error) {
        place?.();
        throw error;
      }
      if (place !== undefined) return listenStream(c, agent, response, place);
      if (session !== undefined || !response.ok || !isInitializeRequest(parsedBody)) return response;
      const stamped = new Response(response.body, response);
      stamped.headers.set('mcp-session-id', randomUUID());
      return stamped;
    },
  );

  function changeStream(c: Context<ApiEnv>, agent: Agent) {
    if (!(c.req.header('accept') ?? '').includes('text/event-stream'))
      return c.json(rpcError(-32000, 'Not Acceptable: the GET stream is text/event-stream.'), 406);
    const release = streamPlace(agent);
    return countedSSE(c, 'mcp', async (stream) => {
      const cleanups: (() => void)[] = [release];
      try {
        await new Promise<void>((resolve) => {
          const finish = () => resolve();
          stream.onAbort(finish);
          cleanups.push(
            endings(c, agent, finish),
            onToolsChanged(events, agent, () => void stream.writeSSE({ data: LIST_CHANGED }).catch(finish)),
          );
          const heartbeat = setInterval(() => void stream.write(': ping\n\n').catch(finish), HEARTBEAT_MS);
          cleanups.push(() => clearInterval(heartbeat));
        });
      } finally {
        for (const cleanup of cleanups) cleanup();
      }
    });
  }

  /** The SDK's listen stream, forwarded until its client goes, the agent is deleted or the service stops. */
  function listenStream(c: Context<ApiEnv>, agent: Agent, response: Response, release: () => void) {
    let ended = false;
    let undo: (() => void) | undefined;
    const relayed = relay(response, () => {
      ended = true;
      undo?.();
      release();
    });
    if (!ended) undo = endings(c, agent, () => relayed.close());
    return relayed.response;
  }

  /** One of the tenant's notification-stream places; RATE_LIMITED when all are taken. */
  function streamPlace(agent: Agent): () => void {
    const release = streams.tryAcquire(agent.tenantId);
    if (release === undefined)
      throw new SandboxError(
        'RATE_LIMITED',
        `This tenant has ${options.streamsPerTenant ?? 32} MCP notification streams open; close one first.`,
        { data: { retryAfterS: 5 } },
      );
    return release;
  }

  /** Calls `end` when the client goes, the agent is deleted or the service shuts down; returns the undo. */
  function endings(c: Context<ApiEnv>, agent: Agent, end: () => void): () => void {
    const signal = c.req.raw.signal;
    signal.addEventListener('abort', end, { once: true });
    lifecycle.signal.addEventListener('abort', end, { once: true });
    const offDeleted = agents.onDeleted(agent, end);
    if (lifecycle.shuttingDown || signal.aborted) queueMicrotask(end);
    return () => {
      signal.removeEventListener('abort', end);
      lifecycle.signal.removeEventListener('abort', end);
      offDeleted();
    };
  }

  return app;
};
