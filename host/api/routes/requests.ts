// Host requests (things only the client can answer) and remote tools. POST remote-tools adds
// client-executed tools; their calls, `ask` approvals and workflow subagents appear as pending
// requests here and in the events; POST requests/:rid answers one, checked against its kind's
// answer shapes (host/requests/kinds; first answer wins; a settled one is CONFLICT, an expired one
// REQUEST_EXPIRED). A request of another agent reads as NOT_FOUND.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import { SandboxError } from '../../errors.ts';
import type { JsonValue } from '../../json.ts';
import {
  checkAnswer,
  type HostRequest as HostRequestModel,
  type RequestStore,
} from '../../requests/index.ts';
import { jsonBody, jsonRequest, jsonResponse, queryOf } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import {
  Answer,
  Answered,
  ErrorBody,
  HostRequest,
  ID,
  RegisterRemoteTools,
  RemoteToolNames,
  RequestList,
  RequestsQuery,
} from '../schemas.ts';
import { loadAgent } from './agents.ts';

const requestView = (r: HostRequestModel) => ({
  id: r.id,
  kind: r.kind,
  callId: r.callId,
  state: r.state,
  payload: r.payload,
  ...(r.answer === undefined ? {} : { answer: r.answer }),
  createdAt: r.createdAt,
  expiresAt: r.expiresAt,
});

export const requestRoutes = (agents: AgentService, requests: RequestStore): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.post(
    '/v1/agents/:id/remote-tools',
    describeRoute({
      operationId: 'registerRemoteTools',
      tags: ['requests'],
      description:
        'Adds or replaces client-executed tools (JSON Schema parameters). A call becomes a `remote_tool` request the client answers with { result } or { error }.',
      requestBody: jsonRequest(RegisterRemoteTools),
      responses: {
        200: jsonResponse('Every remote tool of the agent', RemoteToolNames),
        400: jsonResponse('Invalid tool', ErrorBody),
      },
    }),
    loadAgent(agents),
    jsonBody(RegisterRemoteTools),
    async (c) => {
      const { tools } = c.get('body') as v.InferOutput<typeof RegisterRemoteTools>;
      return c.json({ tools: await agents.registerRemoteTools(c.get('agent'), tools) });
    },
  );
  app.get(
    '/v1/agents/:id/requests',
    describeRoute({
      operationId: 'listRequests',
      tags: ['requests'],
      parameters: [
        {
          name: 'state',
          in: 'query',
          schema: { type: 'string', enum: ['pending', 'answered', 'expired', 'cancelled'] },
        },
      ],
      responses: { 200: jsonResponse('Requests', RequestList) },
    }),
    loadAgent(agents),
    async (c) => {
      const { state } = queryOf(RequestsQuery, c.req.query());
      return c.json({ requests: (await requests.list(c.get('agent').sessionId, state)).map(requestView) });
    },
  );
  app.get(
    '/v1/agents/:id/requests/:rid',
    describeRoute({
      operationId: 'getRequest',
      tags: ['requests'],
      responses: {
        200: jsonResponse('The request', HostRequest),
        404: jsonResponse('No such request', ErrorBody),
      },
    }),
    loadAgent(agents),
    async (c) => c.json(requestView(await owned(requests, c.get('agent').sessionId, c.req.param('rid')))),
  );
  app.post(
    '/v1/agents/:id/requests/:rid',
    describeRoute({
      operationId: 'answerRequest',
      tags: ['requests'],
      description:
        'Approval: { allow, reason? }. Remote tool: { result } or { error }. Subagent: { result: text } or { result: { text, value? } } (or { output: … }), or { error }. User question: { answers: { <question id>: label | [labels] | text } }. Plan review: { allow, reason? } (allow ends plan mode).',
      requestBody: jsonRequest(Answer),
      responses: {
        200: jsonResponse('Answered', Answered),
        409: jsonResponse('Already settled', ErrorBody),
        410: jsonResponse('Expired', ErrorBody),
      },
    }),
    loadAgent(agents),
    jsonBody(Answer),
    async (c) => {
      const request = await owned(requests, c.get('agent').sessionId, c.req.param('rid'));
      const answer = c.get('body') as JsonValue;
      checkAnswer(request.kind, answer);
      if (!(await requests.answer(request.id, answer))) {
        const now = await requests.get(request.id);
        if (now?.state === 'expired')
          throw new SandboxError(
            'REQUEST_EXPIRED',
            `Request ${request.id} expired before the answer arrived.`,
          );
        throw new SandboxError('CONFLICT', `Request ${request.id} is already ${now?.state ?? 'settled'}.`);
      }
      return c.json({ id: request.id, state: 'answered' });
    },
  );
  return app;
};

const owned = async (
  requests: RequestStore,
  sessionId: string,
  rid: string | undefined,
): Promise<HostRequestModel> => {
  const request = rid !== undefined && v.is(ID, rid) ? await requests.get(rid) : undefined;
  if (request === undefined || request.sessionId !== sessionId)
    throw new SandboxError('NOT_FOUND', `No request ${JSON.stringify((rid ?? '').slice(0, 80))}.`);
  return request;
};
