// Agents: create, list, get, delete, and the exact tool surface the agent's model sees. Another
// tenant's agent id answers 404 like an unknown one, so ids leak nothing.
import { Hono, type MiddlewareHandler } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import type { Agent as AgentModel, CreateAgentRequest } from '../../agents/types.ts';
import { SandboxError } from '../../errors.ts';
import { jsonBody, jsonRequest, jsonResponse, noOptions, noOptionsRequest } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { Agent, AgentList, CreateAgent, ErrorBody, ID, Step, ToolList } from '../schemas.ts';

export const agentView = (agent: AgentModel) => ({
  id: agent.id,
  preset: agent.preset,
  mode: agent.mode,
  sessionId: agent.sessionId,
  config: agent.config,
  ...(agent.links === undefined
    ? {}
    : {
        parentId: agent.links.parentId,
        role: agent.links.role,
        depth: agent.links.depth,
        ...(agent.links.teamId === undefined ? {} : { teamId: agent.links.teamId }),
        ...(agent.links.name === undefined ? {} : { name: agent.links.name }),
      }),
  createdAt: agent.createdAt,
});

/** Loads `:id` as the caller's agent (NOT_FOUND otherwise) into `c.get('agent')`. */
export const loadAgent = (agents: AgentService): MiddlewareHandler<ApiEnv> =>
  async function loadAgent(c, next) {
    const id: string = c.req.param('id') ?? '';
    if (!v.is(ID, id))
      throw new SandboxError('NOT_FOUND', `No agent ${JSON.stringify(String(id).slice(0, 80))}.`);
    c.set('agent', await agents.get(c.get('tenant').id, id));
    await next();
  };

export const notFound = { 404: jsonResponse('No such agent for this tenant', ErrorBody) };

export const agentRoutes = (agents: AgentService): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.post(
    '/v1/agents',
    describeRoute({
      operationId: 'createAgent',
      tags: ['agents'],
      description: 'The sandbox is created on first use (first call or file transfer), not here.',
      requestBody: jsonRequest(CreateAgent),
      responses: { 201: jsonResponse('Created', Agent), 400: jsonResponse('Invalid', ErrorBody) },
    }),
    jsonBody(CreateAgent, { empty: () => ({}) }),
    async (c) => {
      const agent = await agents.create(c.get('tenant').id, c.get('body') as CreateAgentRequest);
      return c.json(agentView(agent), 201, { Location: `/v1/agents/${agent.id}` });
    },
  );
  app.get(
    '/v1/agents',
    describeRoute({
      operationId: 'listAgents',
      tags: ['agents'],
      responses: { 200: jsonResponse("The tenant's agents", AgentList) },
    }),
    async (c) =>
      c.json({
        agents: (await agents.usage.list(c.get('tenant').id)).map(({ agent, state }) => ({
          ...agentView(agent),
          state,
        })),
      }),
  );
  app.get(
    '/v1/agents/:id',
    describeRoute({
      operationId: 'getAgent',
      tags: ['agents'],
      responses: { 200: jsonResponse('The agent', Agent), ...notFound },
    }),
    loadAgent(agents),
    async (c) => c.json({ ...agentView(c.get('agent')), state: await agents.usage.state(c.get('agent')) }),
  );
  app.delete(
    '/v1/agents/:id',
    describeRoute({
      operationId: 'deleteAgent',
      tags: ['agents'],
      description:
        "Also destroys the agent's sandbox, and deletes its child agents and teammates with it (their pending runs and unread mail are cancelled).",
      responses: { 204: { description: 'Deleted' }, ...notFound },
    }),
    loadAgent(agents),
    async (c) => {
      await agents.delete(c.get('tenant').id, c.get('agent').id);
      return c.body(null, 204);
    },
  );
  app.get(
    '/v1/agents/:id/tools',
    describeRoute({
      operationId: 'listTools',
      tags: ['agents'],
      description:
        "Exactly what the model sees in the agent's mode; run_code's description carries the generated SDK.",
      responses: { 200: jsonResponse('The model-facing tools', ToolList), ...notFound },
    }),
    loadAgent(agents),
    async (c) => c.json(await agents.tools(c.get('agent'))),
  );
  app.post(
    '/v1/agents/:id/steps',
    describeRoute({
      operationId: 'openStep',
      tags: ['agents'],
      description:
        'Resolves the tools the model sees once and keeps them as a step: POST /calls naming `step` runs against exactly this set (a tool added, replaced or removed since is UNKNOWN_TOOL). Steps expire (`expiresAt`; then STEP_NOT_FOUND); an agent keeps its 16 newest.',
      requestBody: noOptionsRequest(),
      responses: { 201: jsonResponse('The step and its tools', Step), ...notFound },
    }),
    loadAgent(agents),
    noOptions(),
    async (c) => c.json(await agents.step(c.get('agent')), 201),
  );
  return app;
};
