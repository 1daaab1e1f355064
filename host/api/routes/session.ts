// Session state over HTTP: the todo list (todo_write), the current goal (create_goal / update_goal)
// and plan mode, which the client turns on and off here (a policy can start an agent in it:
// `policy.planMode`; an approved exit_plan_mode plan ends it). Every change is also an event on
// the agent's session stream (`session.todos`, `session.goal`, `session.plan_mode`).
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import { jsonBody, jsonRequest, jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { CurrentGoal, ErrorBody, PlanMode, SetPlanMode, TodoList } from '../schemas.ts';
import { loadAgent, notFound } from './agents.ts';

export const sessionRoutes = (agents: AgentService): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/agents/:id/todos',
    describeRoute({
      operationId: 'getTodos',
      tags: ['session'],
      description: 'The whole list as todo_write last replaced it (empty before the first).',
      responses: { 200: jsonResponse('The task list', TodoList), ...notFound },
    }),
    loadAgent(agents),
    async (c) => c.json({ todos: (await agents.session(c.get('agent'))).todos() }),
  );
  app.get(
    '/v1/agents/:id/goal',
    describeRoute({
      operationId: 'getGoal',
      tags: ['session'],
      description:
        'The current goal: state, revision and usage (rounds: call batches run while it was active). null before create_goal.',
      responses: { 200: jsonResponse('The current goal', CurrentGoal), ...notFound },
    }),
    loadAgent(agents),
    async (c) => c.json({ goal: (await agents.session(c.get('agent'))).goal() }),
  );
  app.get(
    '/v1/agents/:id/plan-mode',
    describeRoute({
      operationId: 'getPlanMode',
      tags: ['session'],
      responses: { 200: jsonResponse('Whether the agent is in plan mode', PlanMode), ...notFound },
    }),
    loadAgent(agents),
    async (c) => c.json({ planMode: (await agents.session(c.get('agent'))).planMode() }),
  );
  app.put(
    '/v1/agents/:id/plan-mode',
    describeRoute({
      operationId: 'setPlanMode',
      tags: ['session'],
      description:
        'Turns plan mode on or off. While on, the pipeline refuses every call not declared read-only (code PLAN_MODE), inner calls of run_code included.',
      requestBody: jsonRequest(SetPlanMode),
      responses: {
        200: jsonResponse('The new state', PlanMode),
        400: jsonResponse('Invalid', ErrorBody),
        ...notFound,
      },
    }),
    loadAgent(agents),
    jsonBody(SetPlanMode),
    async (c) => {
      const { planMode } = c.get('body') as v.InferOutput<typeof SetPlanMode>;
      const session = await agents.session(c.get('agent'));
      return c.json({ planMode: await session.setPlanMode(planMode, 'client') });
    },
  );
  return app;
};
