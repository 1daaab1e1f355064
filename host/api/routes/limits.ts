// Per-tenant quotas over HTTP: the operator sets a tenant's (PUT /v1/tenants/:id/limits, admin
// key; the body replaces them whole), the tenant reads its own with what it uses (GET /v1/limits).
// Enforced where a request makes what they bound (../quotas.ts).
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type * as v from 'valibot';
import type { AgentService } from '../../agents/service.ts';
import { SandboxError } from '../../errors.ts';
import type { TenantStore } from '../../store/index.ts';
import type { EventPayloads } from '../../store/types.ts';
import { adminAuth } from '../auth.ts';
import { jsonBody, jsonRequest, jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { quotaUsage } from '../quotas.ts';
import { ErrorBody, TenantLimits, TenantQuotasBody, TenantView } from '../schemas.ts';

export const ownLimitRoutes = (
  tenants: TenantStore,
  agents: AgentService,
  workspaceMb: number,
  events: Pick<EventPayloads, 'usageOf'>,
): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/limits',
    describeRoute({
      operationId: 'getOwnLimits',
      tags: ['keys'],
      description:
        "The calling tenant's quotas as the operator set them (absent: no such bound) and what it uses of them.",
      responses: { 200: jsonResponse('Its quotas and usage', TenantLimits) },
    }),
    async (c) => {
      const tenantId = c.get('tenant').id;
      const quotas = (await tenants.getTenant(tenantId))?.quotas ?? {};
      const snapshotBytes = await agents.snapshots.usedBytes(tenantId).catch(() => undefined);
      // What its log holds as its budget counts it (queued events included): its own row only.
      const logBytes = (await events.usageOf(tenantId)).bytes;
      const checkpointBytes = await agents.checkpointBytes(tenantId);
      return c.json({
        quotas,
        usage: {
          ...(await quotaUsage(agents, tenantId, workspaceMb)),
          ...(snapshotBytes === undefined ? {} : { snapshotBytes }),
          logBytes,
          ...(checkpointBytes === undefined ? {} : { checkpointBytes }),
        },
      });
    },
  );
  return app;
};

export const adminLimitRoutes = (tenants: TenantStore, adminKey: string | undefined): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.put(
    '/v1/tenants/:id/limits',
    describeRoute({
      operationId: 'setTenantLimits',
      tags: ['tenants'],
      description:
        "Needs the admin key. Replaces the tenant's quotas: `agents` bounds its live top-level agents, `diskMb` the MiB of workspace its live agents hold (the sum of their workspaces' sizes), `snapshotBytes` the host disk its workspace snapshots take together, `plugins` the plugins its agents run at once (in place of DSH_PLUGINS_PER_TENANT); a create or start past one answers LIMIT_EXCEEDED, and what it has already stays. `logBytes` is its durable log's budget (in place of DSH_TENANT_LOG_BYTES): past it, calls are refused with STORE_BUDGET_EXCEEDED. `checkpointBytes` bounds the bytes its agents' checkpoints keep together on a control plane's disk (in place of DSH_TENANT_CHECKPOINT_MAX_BYTES): past it its oldest checkpoints are dropped, whichever agent holds them, and no call fails for it. Effective at once on this replica, within a few seconds on the others. `{}` clears them.",
      requestBody: jsonRequest(TenantQuotasBody),
      responses: {
        200: jsonResponse('The tenant, with its quotas', TenantView),
        401: jsonResponse('Wrong admin key', ErrorBody),
        403: jsonResponse('No admin key configured', ErrorBody),
        404: jsonResponse('No such tenant, or it was deleted', ErrorBody),
      },
    }),
    adminAuth(adminKey),
    jsonBody(TenantQuotasBody),
    async (c) => {
      const id = c.req.param('id');
      const tenant = await tenants.setQuotas(id, c.get('body') as v.InferOutput<typeof TenantQuotasBody>);
      if (tenant === undefined)
        throw new SandboxError('NOT_FOUND', `No tenant ${id}.`, { data: { tenantId: id } });
      return c.json(tenant);
    },
  );
  return app;
};
