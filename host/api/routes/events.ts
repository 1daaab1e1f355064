// GET /v1/agents/:id/events: the agent's durable log. JSON pages (`?after=SEQ&limit=N` → events
// and `next`), or with `Accept: text/event-stream` a live stream that first replays everything
// after `Last-Event-ID` (or `after`) and then follows new events; each SSE id is the event's seq,
// so a reconnect resumes exactly. GET /v1/agents/:id/events/:seq/payload?pointer=P: one large
// value of an event.
// The stream itself is events-stream.ts's.
// Invariants: no event is skipped or repeated between replay and live (both read the log after
// the last seq sent; notifications only say how far the durable log reaches); a page, and every
// read of the stream, is bounded in count and in bytes (at least one event), and large values
// travel as references (`payloads`), each fetched on its own through the agent, so another
// tenant's agent answers 404 and its payloads cannot be reached.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import { SandboxError } from '../../errors.ts';
import type { EventLog, EventPayloads } from '../../store/types.ts';
import { jsonResponse, queryOf, sseAlternative } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import type { Lifecycle } from '../lifecycle.ts';
import { ErrorBody, Event, EventPage, EventsQuery, PayloadQuery } from '../schemas.ts';
import { countedSSE } from '../sse.ts';
import { loadAgent } from './agents.ts';
import { eventView, wantsSse } from './calls.ts';
import { exportRoute } from './events-export.ts';
import { type EventRoutesState, eventPage, followEvents, keptFrom } from './events-stream.ts';

/** The data of the last event of a stream that ends (`deleted`, `shutdown`). */
const StreamEnd = v.object({ lastEventId: v.number(), message: v.string() });
/** The data of `truncated`: retention overtook the stream. */
const StreamTruncated = v.object({ lastEventId: v.number(), firstSeq: v.number(), message: v.string() });

export const eventRoutes = (
  agents: AgentService,
  events: EventLog & EventPayloads,
  lifecycle: Lifecycle,
  /** Byte bound of a page and of every read of a stream (ApiLimits.eventPageBytes). */
  pageBytes: number,
): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  const state: EventRoutesState = { agents, events, lifecycle, pageBytes };

  app.get(
    '/v1/agents/:id/events',
    describeRoute({
      operationId: 'listEvents',
      tags: ['events'],
      description:
        `Pages hold at most \`limit\` events and about ${pageBytes} bytes (at least one event); values ` +
        "of event data over 16 KiB come as markers listed in the event's `payloads`.",
      parameters: [
        {
          name: 'after',
          in: 'query',
          schema: { type: 'integer', minimum: 0 },
          description: 'Only events with seq > after',
        },
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 5000 } },
        {
          name: 'Last-Event-ID',
          in: 'header',
          schema: { type: 'string' },
          description: 'SSE resume point (wins over after)',
        },
      ],
      responses: {
        200: {
          ...jsonResponse('A page of events', EventPage),
          ...sseAlternative(
            { event: Event, deleted: StreamEnd, shutdown: StreamEnd, truncated: StreamTruncated },
            "With Accept: text/event-stream: `event` events (each a session event as JSON, its seq as id; resume with Last-Event-ID), `: ping` comments, then `deleted` when the agent is deleted, `shutdown` when the service stops, or `truncated` when the tenant's retention removed events before the stream sent them (it ends rather than skip them; `firstSeq` says where the kept log goes on).",
          ),
        },
        404: jsonResponse('No such agent', ErrorBody),
        410: jsonResponse('`after` (or Last-Event-ID) is older than the kept log (LOG_TRUNCATED)', ErrorBody),
      },
    }),
    loadAgent(agents),
    async (c) => {
      const query = queryOf(EventsQuery, c.req.query());
      const sessionId = c.get('agent').sessionId;
      await events.flush();
      if (!wantsSse(c.req.header('accept'))) {
        const after = query.after ?? 0;
        const firstSeq = await keptFrom(state, sessionId, after);
        const events = await eventPage(state, sessionId, after, query.limit ?? 500);
        const next = events.at(-1)?.seq ?? Math.max(after, firstSeq - 1);
        return c.json({ events: events.map(eventView), next, firstSeq });
      }
      const header = c.req.header('last-event-id');
      if (header !== undefined && !/^\d{1,15}$/.test(header))
        throw new SandboxError('BAD_REQUEST', 'Last-Event-ID must be an event seq.');
      const last = header === undefined ? (query.after ?? 0) : Number(header);
      await keptFrom(state, sessionId, last);
      return countedSSE(c, 'events', (stream) => followEvents(state, c, stream, sessionId, last));
    },
  );

  exportRoute(app, state);

  app.get(
    '/v1/agents/:id/events/:seq/payload',
    describeRoute({
      operationId: 'getEventPayload',
      tags: ['events'],
      description:
        "One large value of an event, as JSON: `pointer` is one of the event's `payloads` pointers. " +
        '404 when the event has no such payload, or when it was not kept (its tenant was over its log budget).',
      parameters: [
        { name: 'seq', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } },
        { name: 'pointer', in: 'query', required: true, schema: { type: 'string' } },
      ],
      responses: {
        200: jsonResponse('The value', v.unknown()),
        404: jsonResponse('No such agent, event or payload', ErrorBody),
      },
    }),
    loadAgent(agents),
    async (c) => {
      const seq = c.req.param('seq');
      if (!/^\d{1,15}$/.test(seq)) throw new SandboxError('BAD_REQUEST', 'seq must be an event seq.');
      const { pointer } = queryOf(PayloadQuery, c.req.query());
      const text = await events.payload(c.get('agent').sessionId, Number(seq), pointer);
      return c.body(text, 200, { 'content-type': 'application/json' });
    },
  );
  return app;
};
