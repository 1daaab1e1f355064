// An agent's state and usage (GET /v1/agents/:id/usage): its state on this instance, the size of
// its session log (its last seq, and its tool calls counted from the log's index), and what its
// sandbox uses now (disk through the provider; memory and CPU from one Docker stats sample,
// bounded). The operator's workspaces (GET /v1/admin/workspaces, admin key): every agent's
// workspace with its disk, paged by agent id. Both read only; neither starts a sandbox.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import { MAX_WORKSPACE_PAGE } from '../../agents/service/usage.ts';
import type { AgentService } from '../../agents/service.ts';
import type { Store } from '../../store/index.ts';
import { adminAuth } from '../auth.ts';
import { jsonResponse, queryOf } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { AgentUsage, ErrorBody, ID, WorkspaceList } from '../schemas.ts';
import { loadAgent, notFound } from './agents.ts';

/** How long the usage route waits for a container's memory and CPU before answering without them. */
const STATS_TIMEOUT_MS = 3000;

/** The log part of an agent's usage. */
async function logUsage(store: Pick<Store, 'events' | 'search'>, tenantId: string, sessionId: string) {
  const events = (await store.search.session(tenantId, sessionId))?.lastSeq ?? 0;
  const last =
    events === 0
      ? undefined
      : (await store.events.list(sessionId, { afterSeq: events - 1, limit: 1, payloads: 'refs' }))[0];
  return {
    events,
    calls: await store.search.count(tenantId, sessionId, 'tool.call'),
    ...(last === undefined ? {} : { lastEventAt: last.at }),
  };
}

/** The page GET /v1/admin/workspaces asks for. */
const WorkspacesQuery = v.object({
  after: v.optional(ID),
  limit: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{1,3}$/, `limit is 1-${MAX_WORKSPACE_PAGE}`),
      v.transform(Number),
      v.minValue(1),
      v.maxValue(MAX_WORKSPACE_PAGE),
    ),
  ),
});

export const usageRoutes = (
  agents: AgentService,
  store: Pick<Store, 'events' | 'search'>,
  adminKey: string | undefined,
): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/agents/:id/usage',
    describeRoute({
      operationId: 'getAgentUsage',
      tags: ['agents'],
      description: `Never starts the sandbox. Memory and CPU are left out when the container is not running or Docker takes longer than ${STATS_TIMEOUT_MS} ms to sample them.`,
      responses: { 200: jsonResponse("The agent's state and usage", AgentUsage), ...notFound },
    }),
    loadAgent(agents),
    async (c) => {
      const agent = c.get('agent');
      await store.events.flush(); // counts what was appended so far, as the events route shows it
      const used = await agents.usage.sandbox(agent, { stats: true, statsTimeoutMs: STATS_TIMEOUT_MS });
      const log = await logUsage(store, agent.tenantId, agent.sessionId);
      return c.json({
        id: agent.id,
        state: await agents.usage.state(agent),
        log,
        ...used,
      });
    },
  );
  app.get(
    '/v1/admin/workspaces',
    describeRoute({
      operationId: 'listWorkspaces',
      tags: ['tenants'],
      description: `Needs the admin key (DSH_ADMIN_KEY). The workspaces of every tenant's agents that have a sandbox, by agent id, with their disk; \`limit\` 1-${MAX_WORKSPACE_PAGE} (default 50), \`after\` the \`next\` of the page before.`,
      parameters: [
        { name: 'after', in: 'query', required: false, schema: { type: 'string' } },
        {
          name: 'limit',
          in: 'query',
          required: false,
          schema: { type: 'integer', minimum: 1, maximum: MAX_WORKSPACE_PAGE },
        },
      ],
      responses: {
        200: jsonResponse('A page of workspaces', WorkspaceList),
        400: jsonResponse('Invalid page', ErrorBody),
        401: jsonResponse('Wrong admin key', ErrorBody),
        403: jsonResponse('No admin key configured', ErrorBody),
      },
    }),
    adminAuth(adminKey),
    async (c) => c.json(await agents.usage.workspaces(queryOf(WorkspacesQuery, c.req.query()))),
  );
  return app;
};
