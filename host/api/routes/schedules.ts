// An agent's schedules (schedule_create's reminders) over HTTP: list them, delete one. They are
// made by the agent's own schedule_create calls; when one fires it is a `schedule.fired` event
// and a pending `reminder` request (routes/requests.ts). Another agent's schedule reads as
// NOT_FOUND.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type { AgentService } from '../../agents/service.ts';
import { SandboxError } from '../../errors.ts';
import type { ScheduleService } from '../../tools/builtin/index.ts';
import { jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody, ScheduleList } from '../schemas.ts';
import { loadAgent } from './agents.ts';

export const scheduleRoutes = (agents: AgentService, schedules: ScheduleService): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/agents/:id/schedules',
    describeRoute({
      operationId: 'listSchedules',
      tags: ['schedules'],
      description: "The agent's schedules, oldest first, with when each fires next.",
      responses: { 200: jsonResponse('Schedules', ScheduleList) },
    }),
    loadAgent(agents),
    async (c) => {
      const agent = c.get('agent');
      return c.json({ schedules: await schedules.list({ tenantId: agent.tenantId, agentId: agent.id }) });
    },
  );
  app.delete(
    '/v1/agents/:id/schedules/:sid',
    describeRoute({
      operationId: 'deleteSchedule',
      tags: ['schedules'],
      responses: { 204: { description: 'Deleted' }, 404: jsonResponse('No such schedule', ErrorBody) },
    }),
    loadAgent(agents),
    async (c) => {
      const agent = c.get('agent');
      const sid = c.req.param('sid') ?? '';
      if (!(await schedules.delete({ tenantId: agent.tenantId, agentId: agent.id }, sid)))
        throw new SandboxError('NOT_FOUND', `No schedule ${JSON.stringify(sid.slice(0, 80))}.`);
      return c.body(null, 204);
    },
  );
  return app;
};
