// POST /v1/agents/:id/calls: one batch through the one pipeline, results in call order. With
// `Accept: text/event-stream` the same batch streams: `progress` events (the batch's session
// events: calls, inner calls, host requests, results, with their seq as id) and then one `results`
// event. A client that disconnects cancels the batch (cooperatively; the log records it); a batch
// that outlives `callTimeoutMs` is cancelled the same way.
// With an `Idempotency-Key` header (../idempotency.ts decides, docs/api.md tells), the batch runs
// at most once per key: a retry gets the first answer, marked `Idempotent-Replayed: true` (over
// SSE: its `results` or `error` event only). Without the header nothing of that runs.
import { type Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { describeRoute } from 'hono-openapi';
import type * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import type { Agent } from '../../agents/types.ts';
import { isSandboxError, SandboxError } from '../../errors.ts';
import type { SessionEvent } from '../../store/types.ts';
import type { ToolResult } from '../../tools/types.ts';
import { jsonBody, jsonRequest, jsonResponse, sseAlternative } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { errorBodyOf } from '../errors.ts';
import {
  bodyHashOf,
  createIdempotency,
  IDEMPOTENCY_HEADER,
  type Idempotency,
  type IdempotencyOptions,
  keyOf,
  MAX_KEY_LENGTH,
  REPLAYED_HEADER,
  type Ticket,
} from '../idempotency.ts';
import { Calls, ErrorBody, Event, Results } from '../schemas.ts';
import { countedSSE } from '../sse.ts';
import { loadAgent } from './agents.ts';

export const eventView = (e: SessionEvent) => ({
  seq: e.seq,
  at: e.at,
  type: e.type,
  surface: e.surface,
  ...(e.callId === undefined ? {} : { callId: e.callId }),
  ...(e.parentCallId === undefined ? {} : { parentCallId: e.parentCallId }),
  data: e.data,
  // Where `data` holds markers of large values stored once (fetch each by its pointer).
  ...(e.payloads === undefined ? {} : { payloads: e.payloads }),
});

export const wantsSse = (accept: string | undefined): boolean => (accept ?? '').includes('text/event-stream');

/**
 * The batch's signal: aborted when the client goes away (with the request's reason) or after `ms`
 * (a TimeoutError, as AbortSignal.timeout gives). `done` drops the timer and the listener; what
 * AbortSignal.any over AbortSignal.timeout cost per request (a composite signal, a timer left
 * pending for the whole deadline) is one controller and a timer cleared when the batch ends.
 */
export const batchSignal = (request: AbortSignal, ms: number): { signal: AbortSignal; done(): void } => {
  const controller = new AbortController();
  const onAbort = () => controller.abort(request.reason);
  const timer = setTimeout(
    () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    ms,
  );
  timer.unref();
  if (request.aborted) onAbort();
  else request.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    done() {
      clearTimeout(timer);
      request.removeEventListener('abort', onAbort);
    },
  };
};

/** A stored answer sent again: as it was (JSON), or as the one event that ends a stream (SSE). */
const replay = (c: Context<ApiEnv>, outcome: { status: number; body: string }, sse: boolean): Response => {
  const headers = { [REPLAYED_HEADER]: 'true' };
  if (!sse)
    return c.newResponse(outcome.body, outcome.status as ContentfulStatusCode, {
      ...headers,
      'Content-Type': 'application/json',
    });
  for (const [name, value] of Object.entries(headers)) c.header(name, value);
  return countedSSE(c, 'calls', (stream) =>
    stream.writeSSE({ event: outcome.status === 200 ? 'results' : 'error', data: outcome.body }),
  );
};

export const callRoutes = (
  agents: AgentService,
  callTimeoutMs: number,
  /** Where keyed batches are kept (store.callBatches); without it the header is refused. */
  keyed?: Idempotency | IdempotencyOptions,
): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  const idempotency = keyed === undefined || 'begin' in keyed ? keyed : createIdempotency(keyed);
  app.post(
    '/v1/agents/:id/calls',
    describeRoute({
      operationId: 'callTools',
      tags: ['calls'],
      description:
        'Runs a batch of tool calls. With Accept: text/event-stream: `progress` events, then one `results` event.',
      parameters: [
        {
          name: IDEMPOTENCY_HEADER,
          in: 'header',
          required: false,
          schema: { type: 'string', minLength: 1, maxLength: MAX_KEY_LENGTH },
          description:
            'Runs the batch at most once per key (per agent, kept 24 h): a retry with the same key and body gets the first answer, marked Idempotent-Replayed: true.',
        },
      ],
      requestBody: jsonRequest(Calls),
      responses: {
        200: {
          ...jsonResponse('Results in call order', Results),
          headers: {
            [REPLAYED_HEADER]: {
              description:
                'On an answer to a retried Idempotency-Key: the batch was not run for this request (its first answer, stored or awaited).',
              schema: { type: 'string', enum: ['true'] },
            },
          },
          ...sseAlternative(
            { progress: Event, results: Results, error: ErrorBody },
            'With Accept: text/event-stream: `progress` events (each a session event as JSON, its seq as id), then one `results` event, or an `error` event.',
          ),
        },
        400: jsonResponse('A malformed body or Idempotency-Key (IDEMPOTENCY_KEY_INVALID)', ErrorBody),
        404: jsonResponse('No such agent', ErrorBody),
        409: jsonResponse(
          "The Idempotency-Key's batch still runs on another replica (IDEMPOTENCY_KEY_IN_PROGRESS; retry after Retry-After)",
          ErrorBody,
        ),
        422: jsonResponse(
          'The Idempotency-Key was used for another batch (IDEMPOTENCY_KEY_REUSED)',
          ErrorBody,
        ),
      },
    }),
    loadAgent(agents),
    jsonBody(Calls),
    async (c) => {
      const body = c.get('body') as v.InferOutput<typeof Calls>;
      const { calls, step } = body;
      const agent = c.get('agent');
      const sse = wantsSse(c.req.header('accept'));
      const key = keyOf(c.req.header(IDEMPOTENCY_HEADER));
      const begun = key === undefined ? undefined : await beginKeyed(idempotency, agent, key, body);
      if (begun?.kind === 'replay') return replay(c, begun.outcome, sse);
      const ticket = begun;
      const deadline = batchSignal(c.req.raw.signal, callTimeoutMs);
      const { signal } = deadline;
      const onStep = step === undefined ? {} : { step };
      if (!sse) {
        try {
          if (ticket === undefined)
            return c.json({ results: await agents.call(agent, calls, { signal, ...onStep }) });
          return await keyedJson(c, ticket, () => agents.call(agent, calls, { signal, ...onStep }));
        } finally {
          deadline.done();
        }
      }
      return countedSSE(
        c,
        'calls',
        async (stream) => {
          const queue: Promise<void>[] = [];
          const onProgress = (event: SessionEvent) => {
            queue.push(
              stream
                .writeSSE({
                  event: 'progress',
                  id: String(event.seq),
                  data: JSON.stringify(eventView(event)),
                })
                .catch(() => undefined), // a gone client must not fail the batch
            );
          };
          try {
            let results: ToolResult[];
            try {
              results = await agents.call(agent, calls, { signal, onProgress, ...onStep });
            } catch (error) {
              await ticket?.failed(error);
              throw error;
            }
            const text = ticket === undefined ? JSON.stringify({ results }) : await ticket.done(results);
            await Promise.all(queue);
            await stream.writeSSE({ event: 'results', data: text });
          } finally {
            deadline.done();
          }
        },
        async (error, stream) => {
          const body = errorBodyOf(error);
          if (!isSandboxError(error))
            process.stderr.write(`SSE call stream failed: ${error.stack ?? String(error)}\n`);
          await stream.writeSSE({ event: 'error', data: JSON.stringify(body) }).catch(() => undefined);
        },
      );
    },
  );
  return app;
};

/** Begins a keyed batch: this request runs it, or the answer is there already. */
function beginKeyed(
  idempotency: Idempotency | undefined,
  agent: Agent,
  key: string,
  body: v.InferOutput<typeof Calls>,
): Promise<Ticket> {
  if (idempotency === undefined)
    throw new SandboxError('IDEMPOTENCY_KEY_INVALID', `This service keeps no ${IDEMPOTENCY_HEADER}s.`);
  const { tenantId, id: agentId, sessionId } = agent;
  return idempotency.begin({
    tenantId,
    agentId,
    key,
    sessionId,
    bodyHash: bodyHashOf(body),
    calls: body.calls,
  });
}

/** A keyed JSON batch: its answer (results or error) stored through the ticket, then sent. */
async function keyedJson(
  c: Context<ApiEnv>,
  ticket: Extract<Ticket, { kind: 'run' }>,
  run: () => Promise<ToolResult[]>,
): Promise<Response> {
  let results: ToolResult[];
  try {
    results = await run();
  } catch (error) {
    await ticket.failed(error);
    throw error;
  }
  return c.newResponse(await ticket.done(results), 200, { 'Content-Type': 'application/json' });
}
