// The /v1/agents/:id/mcp exchange itself (./mcp.ts has the route, its options and what the endpoint
// keeps): a POST served by a fresh SDK handler, a GET's change stream or resumed answer. Its own
// module so that the MCP SDK's server (and zod behind it) is imported at the first MCP request, not
// with the service (./mcp.ts imports this module lazily).
import { randomUUID } from 'node:crypto';
import {
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  type ServerEventBus,
} from '@modelcontextprotocol/server';
import type { Context } from 'hono';
import type { Agent } from '../../agents/types.ts';
import { isSandboxError } from '../../errors.ts';
import type { EventLog } from '../../store/types.ts';
import { readJson } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { batchRefusal, withAnswers } from '../mcp/batches.ts';
import { onToolsChanged } from '../mcp/changes.ts';
import { batchParamsRefusals, paramsRefusal } from '../mcp/params.ts';
import { agentMcpServer } from '../mcp/server.ts';
import {
  answerPlace,
  changeStream,
  listenStream,
  type McpRoutesState,
  ownerOf,
  resumeStream,
  rpcError,
  streamPlace,
} from './mcp-streams.ts';

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

/** The requests (messages with an id) of a batch, each a call it may run; 1 for a single message. */
const requestsIn = (body: unknown): number =>
  Array.isArray(body)
    ? body.filter((m) => typeof m === 'object' && m !== null && 'id' in m && 'method' in m).length
    : 1;

/** The handler's change-event bus, fed by this agent's tool-set changes; nothing publishes on it. */
const agentBus = (events: EventLog, agent: Agent): ServerEventBus => ({
  publish() {},
  subscribe: (listener) => onToolsChanged(events, agent, () => listener({ kind: 'tools_list_changed' })),
});
/** A POST (or DELETE) to the endpoint, served by a fresh SDK handler; a GET opens the change stream. */
export async function serveMcp(state: McpRoutesState, c: Context<ApiEnv>): Promise<Response> {
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
  // A 2025-era request outlives its connection (./mcp.ts's header): the SDK gets a copy of it that
  // only the service's shutdown aborts, and so does the call.
  const legacy =
    c.req.method === 'POST' && place === undefined && (await isLegacyRequest(c.req.raw, parsedBody));
  // Params the SDK would answer as its own internal error are the client's: -32602 (../mcp/params.ts).
  const invalid = legacy ? paramsRefusal(parsedBody) : undefined;
  if (invalid !== undefined) return c.json(invalid, 400);
  // A batch's items are checked alike: the refused ones are answered beside the SDK's answers.
  const batch = legacy && Array.isArray(parsedBody) ? batchParamsRefusals(parsedBody) : undefined;
  if (batch !== undefined && batch.rest.length === 0) return withAnswers(undefined, batch.refusals);
  if (batch !== undefined) parsedBody = batch.rest;
  // An answer that runs on after its client went still counts: a tenant has at most
  // ANSWERS_PER_TENANT of them running, connected or not (a 2026-era request ends with its client).
  // Notifications (a cancel among them) answer at once and always get through.
  const answering =
    legacy && !isNotification(parsedBody) ? answerPlace(state, agent, requestsIn(parsedBody)) : undefined;
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
    if (batch !== undefined && batch.refusals.length > 0)
      response = await withAnswers(response, batch.refusals);
  } catch (error) {
    place?.();
    answering?.();
    throw error;
  }
  if (place !== undefined) return listenStream(state, c, agent, response, place);
  if (legacy && (response.headers.get('content-type') ?? '').startsWith('text/event-stream'))
    response = state.resumable.record(ownerOf(agent), response, {
      tenant: agent.tenantId,
      priming: primes(c.req.header('mcp-protocol-version'), parsedBody),
      ...(answering === undefined ? {} : { onEnd: answering }),
    });
  else answering?.();
  if (session !== undefined || !response.ok || !isInitializeRequest(parsedBody)) return response;
  const stamped = new Response(response.body, response);
  stamped.headers.set('mcp-session-id', randomUUID());
  return stamped;
}
