// GET /v1/events/export: every live agent's durable log of the tenant as one NDJSON stream, the
// agents oldest first, each agent's events oldest first, each line an event as the pages show it
// with `agentId` added and every large value in place. A broken download resumes with
// `agent=<agentId of its last whole line>&after=<its seq>`: that agent's events after it, then the
// agents after it. An `after` older than that agent's kept log answers 410 LOG_TRUNCATED; an
// `agent` no longer listed (deleted since, or never the tenant's) answers 404.
// Invariants: one page (bounded in count and bytes) is read per pull, whatever the tenant holds;
// the agents are the ones listed when the export started (one made later is not in it); only
// durable events are exported; another tenant's agents are never read.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import { jsonResponse, queryOf } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody } from '../schemas.ts';
import { eventView } from './calls.ts';
import { EXPORT_PAGE, truncated } from './events-export.ts';
import { type EventRoutesState, keptFrom } from './events-stream.ts';

const TenantExportQuery = v.object({
  agent: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,128}$/, 'agent is an agent id'))),
  after: v.optional(
    v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'after is a sequence number'), v.transform(Number)),
  ),
});

export const tenantExportRoutes = (state: EventRoutesState): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/events/export',
    describeRoute({
      operationId: 'exportTenantEvents',
      tags: ['events'],
      description:
        "Every live agent's durable log of the tenant as NDJSON (`application/x-ndjson`): agents oldest first, each line an event with its `agentId`, large values in place. Resume a broken export with `agent` and `after` = the `agentId` and `seq` of its last whole line.",
      parameters: [
        { name: 'agent', in: 'query', schema: { type: 'string' }, description: 'Resume at this agent' },
        {
          name: 'after',
          in: 'query',
          schema: { type: 'integer', minimum: 0 },
          description: "With agent: only that agent's events with seq > after",
        },
      ],
      responses: {
        200: {
          description: 'One event per line',
          content: { 'application/x-ndjson': { schema: { type: 'string' } } },
        },
        400: jsonResponse('Invalid query', ErrorBody),
        404: jsonResponse('No such agent of the tenant (agent=)', ErrorBody),
        410: jsonResponse("`after` is older than that agent's kept log (LOG_TRUNCATED)", ErrorBody),
      },
    }),
    async (c) => {
      const query = queryOf(TenantExportQuery, c.req.query());
      const agents = await state.agents.list(c.get('tenant').id);
      let index = 0;
      let after = 0;
      if (query.agent !== undefined) {
        index = agents.findIndex((a) => a.id === query.agent);
        if (index < 0)
          throw new SandboxError(
            'NOT_FOUND',
            `No agent ${query.agent} of this tenant (deleted since?): export again without agent=.`,
          );
        after = query.after ?? 0;
        await keptFrom(state, agents[index]!.sessionId, after);
      } else if (query.after !== undefined)
        throw new SandboxError('BAD_REQUEST', 'after= needs agent= (the agent whose seq it is).');
      await state.events.flush();
      const encoder = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          for (; index < agents.length; index++, after = 0) {
            const agent = agents[index]!;
            const page = await state.events.list(agent.sessionId, {
              afterSeq: after,
              limit: EXPORT_PAGE,
              maxBytes: state.pageBytes,
              durable: true,
            });
            if (page.length === 0) continue;
            if (after > 0 && page[0]!.seq !== after + 1) return controller.error(truncated(after));
            after = page.at(-1)!.seq;
            const lines = page.map((e) => JSON.stringify({ agentId: agent.id, ...eventView(e) }));
            return controller.enqueue(encoder.encode(`${lines.join('\n')}\n`));
          }
          controller.close();
        },
      });
      return c.body(body, 200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    },
  );
  return app;
};
