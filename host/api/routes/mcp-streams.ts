// The notification streams of the agent's MCP endpoint (./mcp.ts): the 2025-era GET stream of
// `notifications/tools/list_changed` fed by the agent's log (changeStream), the SDK's 2026-era
// `subscriptions/listen` stream forwarded (listenStream), and a 2025-era GET with Last-Event-ID
// resuming a POST's answer (resumeStream, ../mcp/resume.ts).
// Invariants: a stream holds no tenant request slot but one of the tenant's `streamsPerTenant`
// places (streamPlace, RATE_LIMITED when all are taken), given back exactly once when it ends; it
// ends when its client goes, the agent is deleted, the service shuts down or the key that opened it
// is refused (endings), each kind alike.
import type { Context } from 'hono';
import type { AgentService } from '../../agents/service.ts';
import type { Agent } from '../../agents/types.ts';
import { SandboxError } from '../../errors.ts';
import type { EventLog } from '../../store/types.ts';
import type { ApiEnv } from '../env.ts';
import { onKeyRefused } from '../key-watch.ts';
import type { Lifecycle } from '../lifecycle.ts';
import type { TenantLimiter } from '../limits.ts';
import type { createInflightCalls } from '../mcp/cancels.ts';
import { onToolsChanged } from '../mcp/changes.ts';
import { RETAIN_MS, type ResumableStreams } from '../mcp/resume.ts';
import { relay } from '../relay.ts';
import { countedSSE } from '../sse.ts';

const HEARTBEAT_MS = 15_000;
const LIST_CHANGED = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });

/** What mcpRoutes keeps for all its requests. */
export interface McpRoutesState {
  agents: AgentService;
  events: EventLog;
  lifecycle: Lifecycle;
  version: string;
  callTimeoutMs: number;
  streamsPerTenant: number | undefined;
  inflight: ReturnType<typeof createInflightCalls>;
  resumable: ResumableStreams;
  /** 2025-era answers running per tenant, whether their client is still connected or not. */
  answers: TenantLimiter;
  streams: TenantLimiter;
  origins: Set<string>;
}

/** A JSON-RPC error outside any request (the shape MCP clients read from a failed POST). */
export const rpcError = (code: number, message: string) => ({
  jsonrpc: '2.0',
  error: { code, message },
  id: null,
});

export function changeStream(state: McpRoutesState, c: Context<ApiEnv>, agent: Agent) {
  const { events } = state;
  if (!(c.req.header('accept') ?? '').includes('text/event-stream'))
    return c.json(rpcError(-32000, 'Not Acceptable: the GET stream is text/event-stream.'), 406);
  const release = streamPlace(state, agent);
  return countedSSE(c, 'mcp', async (stream) => {
    const cleanups: (() => void)[] = [release];
    try {
      await new Promise<void>((resolve) => {
        const finish = () => resolve();
        stream.onAbort(finish);
        cleanups.push(
          endings(state, c, agent, finish),
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

/** Who may resume a stream: the agent's tenant, on that agent's endpoint. */
export const ownerOf = (agent: Agent): string => `${agent.tenantId}/${agent.id}`;

/** A POST's answer from after `lastEventId`; 404 when the agent has no such stream (any more). */
export function resumeStream(state: McpRoutesState, c: Context<ApiEnv>, agent: Agent, lastEventId: string) {
  const resumed = state.resumable.resume(ownerOf(agent), lastEventId);
  if (resumed === undefined)
    return c.json(
      rpcError(
        -32000,
        `No stream of this agent to resume after Last-Event-ID ${JSON.stringify(lastEventId.slice(0, 80))}: it is unknown, or its answer ended more than ${RETAIN_MS / 1000} s ago; send the request again.`,
      ),
      404,
    );
  // A stream like the others: it ends with the key that resumed it too, not only with its answer.
  return listenStream(state, c, agent, resumed, streamPlace(state, agent));
}

/**
 * A stream forwarded (the SDK's listen stream, a resumed answer) until its client goes, the agent
 * is deleted, the service stops or the key that opened it is refused (endings).
 */
export function listenStream(
  state: McpRoutesState,
  c: Context<ApiEnv>,
  agent: Agent,
  response: Response,
  release: () => void,
) {
  let ended = false;
  let undo: (() => void) | undefined;
  const relayed = relay(response, () => {
    ended = true;
    undo?.();
    release();
  });
  if (!ended) undo = endings(state, c, agent, () => relayed.close());
  return relayed.response;
}

/**
 * How many 2025-era answers one tenant may have running at once (connected or not), each request
 * of a batch counted as one: a batch runs as many calls as it has requests.
 */
export const ANSWERS_PER_TENANT = 64;

/** `count` of the tenant's running-answer places (all or none); RATE_LIMITED when they are not free. */
export function answerPlace(state: McpRoutesState, agent: Agent, count = 1): () => void {
  const taken: (() => void)[] = [];
  const release = () => {
    for (const one of taken.splice(0)) one();
  };
  for (let i = 0; i < Math.max(1, count); i++) {
    const one = state.answers.tryAcquire(agent.tenantId);
    if (one === undefined) {
      release();
      throw new SandboxError(
        'RATE_LIMITED',
        `This tenant has ${ANSWERS_PER_TENANT} MCP requests running, a batch's each counted (some may be for clients that went and have not resumed); wait for them, or cancel them with notifications/cancelled.`,
        { data: { retryAfterS: 1 } },
      );
    }
    taken.push(one);
  }
  return release;
}

/** One of the tenant's notification-stream places; RATE_LIMITED when all are taken. */
export function streamPlace(state: McpRoutesState, agent: Agent): () => void {
  const release = state.streams.tryAcquire(agent.tenantId);
  if (release === undefined)
    throw new SandboxError(
      'RATE_LIMITED',
      `This tenant has ${state.streamsPerTenant ?? 32} MCP notification streams open; close one first.`,
      { data: { retryAfterS: 5 } },
    );
  return release;
}

/**
 * Calls `end` when the client goes, the agent is deleted, the service shuts down or the key that
 * opened the stream is refused (revoked, expired: ../key-watch.ts); returns the undo.
 */
function endings(state: McpRoutesState, c: Context<ApiEnv>, agent: Agent, end: () => void): () => void {
  const { agents, lifecycle } = state;
  const signal = c.req.raw.signal;
  signal.addEventListener('abort', end, { once: true });
  lifecycle.signal.addEventListener('abort', end, { once: true });
  const offDeleted = agents.onDeleted(agent, end);
  const offKey = onKeyRefused(c, end);
  if (lifecycle.shuttingDown || signal.aborted) queueMicrotask(end);
  return () => {
    signal.removeEventListener('abort', end);
    lifecycle.signal.removeEventListener('abort', end);
    offDeleted();
    offKey();
  };
}
