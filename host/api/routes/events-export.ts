// GET /v1/agents/:id/events/export: the agent's durable log as NDJSON, one event per line (as the
// pages show it, with every large value read back in place), oldest first, from `after` to the
// end of the log as it stands while the export runs. A broken download resumes with
// `after=<seq of its last whole line>`; an `after` older than the kept log answers 410
// LOG_TRUNCATED (events.ts keptFrom), and `X-First-Seq` says where the kept log starts.
// Invariants: one page (bounded in count and in bytes, at least one event) is read per pull, so a
// slow client holds one page in memory, never the whole log; only durable events are exported (a
// seq a client saw is never handed out again); lines are whole JSON texts in seq order, no gaps
// (an export that retention overtakes ends with an error instead of skipping).
import type { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import { SandboxError } from '../../errors.ts';
import { jsonResponse, queryOf } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody, EventsQuery } from '../schemas.ts';
import { loadAgent } from './agents.ts';
import { eventView } from './calls.ts';
import { type EventRoutesState, keptFrom } from './events-stream.ts';

/** Events read per page of an export. */
export const EXPORT_PAGE = 500;

/** What ends an export whose next events retention removed while it ran. */
export const truncated = (after: number): SandboxError =>
  new SandboxError('LOG_TRUNCATED', `Events after ${after} were removed by retention during the export.`, {
    data: { after },
  });

export function exportRoute(app: Hono<ApiEnv>, state: EventRoutesState): void {
  const { agents, events, pageBytes } = state;
  app.get(
    '/v1/agents/:id/events/export',
    describeRoute({
      operationId: 'exportEvents',
      tags: ['events'],
      description:
        "The agent's durable log as NDJSON (`application/x-ndjson`): one event per line, oldest first, large values in place. Resume a broken export with `after` = the seq of its last whole line. `X-First-Seq` says where the kept log starts (retention removes older events).",
      parameters: [
        {
          name: 'after',
          in: 'query',
          schema: { type: 'integer', minimum: 0 },
          description: 'Only events with seq > after',
        },
      ],
      responses: {
        200: {
          description: 'One event per line',
          content: { 'application/x-ndjson': { schema: { type: 'string' } } },
        },
        404: jsonResponse('No such agent', ErrorBody),
        410: jsonResponse('`after` is older than the kept log (LOG_TRUNCATED)', ErrorBody),
      },
    }),
    loadAgent(agents),
    async (c) => {
      const after = queryOf(EventsQuery, c.req.query()).after ?? 0;
      const sessionId = c.get('agent').sessionId;
      await events.flush();
      const firstSeq = await keptFrom(state, sessionId, after);
      const encoder = new TextEncoder();
      let cursor = after;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const page = await events.list(sessionId, {
            afterSeq: cursor,
            limit: EXPORT_PAGE,
            maxBytes: pageBytes,
            durable: true,
          });
          if (page.length === 0) return controller.close();
          // Retention cut the log past this export while it ran: stop rather than skip (the
          // client's resume from its last line then answers 410 LOG_TRUNCATED).
          if (cursor > 0 && page[0]!.seq !== cursor + 1) return controller.error(truncated(cursor));
          cursor = page.at(-1)!.seq;
          controller.enqueue(encoder.encode(`${page.map((e) => JSON.stringify(eventView(e))).join('\n')}\n`));
        },
      });
      return c.body(body, 200, {
        'content-type': 'application/x-ndjson',
        'x-first-seq': String(firstSeq),
        'cache-control': 'no-store',
      });
    },
  );
}
