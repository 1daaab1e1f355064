// One tenant's agents for the operator (admin key): GET /v1/tenants/:id/agents lists them as the
// tenant's own GET /v1/agents does (with their state as this instance knows it: no Docker call),
// so an operator can see every agent of a tenant, not only those with a workspace on disk
// (GET /v1/admin/workspaces). An unknown tenant answers 404; a deleted one an empty list.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type { AgentService } from '../../agents/service.ts';
import { SandboxError } from '../../errors.ts';
import type { TenantStore } from '../../store/index.ts';
import { adminAuth } from '../auth.ts';
import { jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { AgentList, ErrorBody } from '../schemas.ts';
import { agentView } from './agents.ts';

export const tenantAgentRoutes = (
  tenants: Pick<TenantStore, 'getTenant'>,
  agents: AgentService,
  adminKey: string | undefined,
): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/tenants/:id/agents',
    describeRoute({
      operationId: 'listTenantAgents',
      tags: ['tenants'],
      description:
        "Needs the admin key. The tenant's agents (children and teammates too), each with its state as GET /v1/agents shows it.",
      responses: {
        200: jsonResponse("The tenant's agents", AgentList),
        401: jsonResponse('Wrong admin key', ErrorBody),
        403: jsonResponse('No admin key configured', ErrorBody),
        404: jsonResponse('No such tenant', ErrorBody),
      },
    }),
    adminAuth(adminKey),
    async (c) => {
      const id = c.req.param('id');
      if ((await tenants.getTenant(id)) === undefined)
        throw new SandboxError('NOT_FOUND', `No tenant ${id}.`, { data: { tenantId: id } });
      const listed = await agents.usage.list(id);
      return c.json({ agents: listed.map(({ agent, state }) => ({ ...agentView(agent), state })) });
    },
  );
  return app;
};
