// Pausing and resuming an agent over HTTP (host/agents/service/pause.ts does it): POST
// /v1/agents/:id/pause stops its sandbox (or, with `{"mode":"freeze"}`, freezes it), its workspace
// kept, and answers what the pause keeps, loses and still holds; POST /v1/agents/:id/resume starts
// it again. Both are idempotent. Another tenant's agent answers 404 like an unknown one. With
// replicas these are /v1/agents/:id routes like the others: the family's owner serves them.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import { jsonBody, jsonRequest, jsonResponse, noOptions, noOptionsRequest } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody, PauseView } from '../schemas.ts';
import { loadAgent, notFound } from './agents.ts';

const PauseRequest = v.strictObject({
  mode: v.optional(
    v.pipe(
      v.picklist(['stop', 'freeze']),
      v.description(
        "stop (default): the container stopped, no CPU and no memory held; its processes, background jobs, terminals and /tmp end. freeze: its processes frozen in place (the engine's freezer), no CPU but their memory held; they carry on at resume.",
      ),
    ),
  ),
});

const conflicts = {
  409: jsonResponse(
    "AGENT_BUSY: a call, transfer or terminal of the agent is in flight; AGENT_SHARES_WORKSPACE: a child working in its parent's workspace (pause the parent)",
    ErrorBody,
  ),
};

export const pauseRoutes = (agents: AgentService): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.post(
    '/v1/agents/:id/pause',
    describeRoute({
      operationId: 'pauseAgent',
      tags: ['agents'],
      description:
        'Pauses the agent: its sandbox stopped (or frozen), its workspace kept, the pause kept across restarts. The answer says what it keeps, what it lost and what it still holds. Its next call resumes it (the call pays the start), or answers 409 AGENT_PAUSED where the tenant\'s settings say `pause.onCall: "refuse"` (GET/PUT /v1/settings). Pausing a paused agent changes nothing and answers its pause.',
      requestBody: jsonRequest(PauseRequest),
      responses: { 200: jsonResponse('The pause', PauseView), ...notFound, ...conflicts },
    }),
    loadAgent(agents),
    jsonBody(PauseRequest, { empty: () => ({}) }),
    async (c) => {
      const { mode } = c.get('body' as never) as v.InferOutput<typeof PauseRequest>;
      return c.json(await agents.pause(c.get('tenant').id, c.get('agent').id, mode ?? 'stop'));
    },
  );
  app.post(
    '/v1/agents/:id/resume',
    describeRoute({
      operationId: 'resumeAgent',
      tags: ['agents'],
      description:
        'Starts (or thaws) a paused agent and waits until its sandbox answers, so its next call pays nothing more. Resuming a running agent changes nothing.',
      requestBody: noOptionsRequest(),
      responses: { 200: jsonResponse('The agent, running', PauseView), ...notFound, ...conflicts },
    }),
    loadAgent(agents),
    noOptions(),
    async (c) => c.json(await agents.resume(c.get('tenant').id, c.get('agent').id)),
  );
  return app;
};
