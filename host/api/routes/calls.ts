// POST /v1/agents/:id/calls: one batch through the one pipeline, results in call order. With
// `Accept: text/event-stream` the same batch streams: `progress` events (the batch's session
// events: calls, inner calls, host requests, results, with their seq as id) and then one `results`
// event. A client that disconnects cancels the batch (cooperatively; the log records it); a batch
// that outlives `callTimeoutMs` is cancelled the same way.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import { isSandboxError } from '../../errors.ts';
import type { SessionEvent } from '../../store/types.ts';
import { jsonBody, jsonRequest, jsonResponse, sseAlternative } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { errorBodyOf } from '../errors.ts';
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

export const callRoutes = (agents: AgentService, callTimeoutMs: number): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.post(
    '/v1/agents/:id/calls',
    describeRoute({
      operationId: 'callTools',
      tags: ['calls'],
      description:
        'Runs a batch of tool calls. With Accept: text/event-stream: `progress` events, then one `results` event.',
      requestBody: jsonRequest(Calls),
      responses: {
        200: {
          ...jsonResponse('Results in call order', Results),
          ...sseAlternative(
            { progress: Event, results: Results, error: ErrorBody },
            'With Accept: text/event-stream: `progress` events (each a session event as JSON, its seq as id), then one `results` event, or an `error` event.',
          ),
        },
        404: jsonResponse('No such agent', ErrorBody),
      },
    }),
    loadAgent(agents),
    jsonBody(Calls),
    async (c) => {
      const { calls, step } = c.get('body') as v.InferOutput<typeof Calls>;
      const agent = c.get('agent');
      const deadline = batchSignal(c.req.raw.signal, callTimeoutMs);
      const { signal } = deadline;
      const onStep = step === undefined ? {} : { step };
      if (!wantsSse(c.req.header('accept'))) {
        try {
          return c.json({ results: await agents.call(agent, calls, { signal, ...onStep }) });
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
            const results = await agents.call(agent, calls, { signal, onProgress, ...onStep });
            await Promise.all(queue);
            await stream.writeSSE({ event: 'results', data: JSON.stringify({ results }) });
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
