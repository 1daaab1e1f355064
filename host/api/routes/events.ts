// GET /v1/agents/:id/events: the agent's durable log. JSON pages (`?after=SEQ&limit=N` → events
// and `next`), or with `Accept: text/event-stream` a live stream that first replays everything
// after `Last-Event-ID` (or `after`) and then follows new events; each SSE id is the event's seq,
// so a reconnect resumes exactly. Invariant: no event is skipped or repeated between replay and
// live (we subscribe before reading and drop anything at or below the last seq sent).
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { describeRoute } from 'hono-openapi';
import type { AgentService } from '../../agents/service.ts';
import { SandboxError } from '../../errors.ts';
import type { EventLog, SessionEvent } from '../../store/types.ts';
import { jsonResponse, queryOf } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import type { Lifecycle } from '../lifecycle.ts';
import { ErrorBody, EventPage, EventsQuery } from '../schemas.ts';
import { loadAgent } from './agents.ts';
import { eventView, wantsSse } from './calls.ts';

const HEARTBEAT_MS = 15_000;

export const eventRoutes = (agents: AgentService, events: EventLog, lifecycle: Lifecycle): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/agents/:id/events',
    describeRoute({
      operationId: 'listEvents',
      tags: ['events'],
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
          content: { ...jsonResponse('', EventPage).content, 'text/event-stream': {} },
        },
        404: jsonResponse('No such agent', ErrorBody),
      },
    }),
    loadAgent(agents),
    async (c) => {
      const query = queryOf(EventsQuery, c.req.query());
      const sessionId = c.get('agent').sessionId;
      await events.flush();
      if (!wantsSse(c.req.header('accept'))) {
        const page = events.list(sessionId, { afterSeq: query.after ?? 0, limit: query.limit ?? 500 });
        return c.json({ events: page.map(eventView), next: page.at(-1)?.seq ?? query.after ?? 0 });
      }
      const header = c.req.header('last-event-id');
      if (header !== undefined && !/^\d{1,15}$/.test(header))
        throw new SandboxError('BAD_REQUEST', 'Last-Event-ID must be an event seq.');
      let last = header === undefined ? (query.after ?? 0) : Number(header);
      return streamSSE(c, async (stream) => {
        const buffered: SessionEvent[] = [];
        let live = false;
        let wake: (() => void) | undefined;
        const unsubscribe = events.subscribe(sessionId, (event) => {
          buffered.push(event);
          if (live) wake?.();
        });
        const done = new Promise<void>((resolve) => {
          const finish = () => resolve();
          lifecycle.signal.addEventListener('abort', finish, { once: true });
          stream.onAbort(finish);
          c.req.raw.signal.addEventListener('abort', finish, { once: true });
        });
        const send = async (event: SessionEvent) => {
          if (event.seq <= last) return;
          last = event.seq;
          await stream.writeSSE({
            event: 'event',
            id: String(event.seq),
            data: JSON.stringify(eventView(event)),
          });
        };
        const heartbeat = setInterval(
          () => void stream.write(': ping\n\n').catch(() => undefined),
          HEARTBEAT_MS,
        );
        try {
          for (;;) {
            const page = events.list(sessionId, { afterSeq: last, limit: 1000 });
            for (const event of page) await send(event);
            if (page.length < 1000) break;
          }
          live = true;
          while (!stream.aborted && !lifecycle.shuttingDown) {
            // Arm the wake-up before draining, so an event appended during a write is not missed.
            const next = new Promise<void>((resolve) => {
              wake = resolve;
            });
            while (buffered.length > 0) await send(buffered.shift() as SessionEvent);
            await Promise.race([done, next]);
          }
          if (lifecycle.shuttingDown && !stream.aborted) {
            await stream.writeSSE({
              event: 'shutdown',
              data: JSON.stringify({
                lastEventId: last,
                message: 'The service is shutting down; reconnect with Last-Event-ID.',
              }),
            });
          }
        } finally {
          clearInterval(heartbeat);
          unsubscribe();
        }
      });
    },
  );
  return app;
};
