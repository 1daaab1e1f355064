// Workspace snapshots over HTTP (host/agents/service/snapshots.ts does the work): POST
// /v1/agents/:id/snapshots takes one (consistent: the workspace's writes held while it is copied),
// GET /v1/agents/:id/snapshots lists the agent's, GET /v1/snapshots the tenant's, GET and DELETE
// /v1/snapshots/:id one of them. An agent starts from one through POST /v1/agents `fromSnapshot`.
// Another tenant's snapshot or agent answers 404 like an unknown one. The tenant's `snapshotBytes`
// quota (PUT /v1/tenants/:id/limits) is read here and held by the service.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import { SandboxError } from '../../errors.ts';
import type { TenantStore } from '../../store/index.ts';
import { jsonResponse, noOptions, noOptionsRequest } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ErrorBody, SnapshotList, SnapshotView } from '../schemas.ts';
import { loadAgent, notFound } from './agents.ts';

const SNAPSHOT_ID = v.pipe(v.string(), v.regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,120}$/));

const refused = {
  400: jsonResponse(
    "LIMIT_EXCEEDED: past the tenant's snapshotBytes quota (data.limit `snapshotBytes`)",
    ErrorBody,
  ),
  409: jsonResponse(
    "AGENT_SHARES_WORKSPACE: a child working in its parent's workspace (snapshot the parent)",
    ErrorBody,
  ),
  501: jsonResponse(
    'SNAPSHOT_UNSUPPORTED: workspaces here cannot be snapshotted (volumes without a size limit, the memory provider)',
    ErrorBody,
  ),
};
const noSnapshot = { 404: jsonResponse('No such snapshot for this tenant', ErrorBody) };

/** The snapshot id of the path, or NOT_FOUND for one that could name none. */
const idOf = (raw: string | undefined): string => {
  if (!v.is(SNAPSHOT_ID, raw))
    throw new SandboxError('NOT_FOUND', `No snapshot ${JSON.stringify(String(raw).slice(0, 80))}.`);
  return raw;
};

export const snapshotRoutes = (
  agents: AgentService,
  tenants: Pick<TenantStore, 'getTenant'>,
): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.post(
    '/v1/agents/:id/snapshots',
    describeRoute({
      operationId: 'snapshotAgent',
      tags: ['agents'],
      description:
        "Takes a snapshot of the agent's workspace: a sparse copy on its node, consistent (its file system is frozen while the copy is made: the sandbox's writes wait, reads go on; a file written whole before is whole, one being written may be partial). Processes, /tmp and terminals are not in it. A paused agent stays paused. Counted against the tenant's snapshotBytes quota; kept across restarts and after the agent is deleted.",
      requestBody: noOptionsRequest(),
      responses: { 201: jsonResponse('The snapshot', SnapshotView), ...notFound, ...refused },
    }),
    loadAgent(agents),
    noOptions(),
    async (c) => {
      const tenantId = c.get('tenant').id;
      const maxBytes = (await tenants.getTenant(tenantId))?.quotas?.snapshotBytes;
      const taken = await agents.snapshots.take(
        tenantId,
        c.get('agent').id,
        maxBytes === undefined ? {} : { maxBytes },
      );
      return c.json(taken, 201);
    },
  );
  app.get(
    '/v1/agents/:id/snapshots',
    describeRoute({
      operationId: 'listAgentSnapshots',
      tags: ['agents'],
      description: "The agent's snapshots, oldest first.",
      responses: { 200: jsonResponse('Its snapshots', SnapshotList), ...notFound },
    }),
    loadAgent(agents),
    async (c) => c.json({ snapshots: await agents.snapshots.list(c.get('tenant').id, c.get('agent').id) }),
  );
  app.get(
    '/v1/snapshots',
    describeRoute({
      operationId: 'listSnapshots',
      tags: ['agents'],
      description: "The tenant's snapshots (of agents deleted since too), oldest first.",
      responses: { 200: jsonResponse('Its snapshots', SnapshotList) },
    }),
    async (c) => c.json({ snapshots: await agents.snapshots.list(c.get('tenant').id) }),
  );
  app.get(
    '/v1/snapshots/:id',
    describeRoute({
      operationId: 'getSnapshot',
      tags: ['agents'],
      description: 'One snapshot of the tenant.',
      responses: { 200: jsonResponse('The snapshot', SnapshotView), ...noSnapshot },
    }),
    async (c) => c.json(await agents.snapshots.get(c.get('tenant').id, idOf(c.req.param('id')))),
  );
  app.delete(
    '/v1/snapshots/:id',
    describeRoute({
      operationId: 'deleteSnapshot',
      tags: ['agents'],
      description: 'Deletes a snapshot and its file (agents made from it keep their copies).',
      responses: { 204: { description: 'Deleted' }, ...noSnapshot },
    }),
    async (c) => {
      await agents.snapshots.delete(c.get('tenant').id, idOf(c.req.param('id')));
      return c.body(null, 204);
    },
  );
  return app;
};
