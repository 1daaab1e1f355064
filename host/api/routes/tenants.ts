// POST /v1/tenants (admin key): creates a tenant and returns its API key, once. GET /v1/tenants
// (admin key): every tenant's id, name, creation time and state (no keys), for the operator;
// GET /v1/tenants/:id one of them (while deleting, with what is left); DELETE /v1/tenants/:id
// refuses the tenant at once and removes its things in the background (host/tenants/deletion.ts).
// Its keys: ./keys.ts.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import type { TenantStore } from '../../store/index.ts';
import type { TenantDeletion } from '../../tenants/deletion.ts';
import { adminAuth } from '../auth.ts';
import { jsonBody, jsonRequest, jsonResponse } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { CreateTenant, ErrorBody, TenantCreated, TenantList, TenantView } from '../schemas.ts';

const noTenant = (id: string): SandboxError =>
  new SandboxError('NOT_FOUND', `No tenant ${id}.`, { data: { tenantId: id } });

const adminErrors = {
  401: jsonResponse('Wrong admin key', ErrorBody),
  403: jsonResponse('No admin key configured', ErrorBody),
  404: jsonResponse('No such tenant', ErrorBody),
};

export const tenantRoutes = (
  tenants: TenantStore,
  adminKey: string | undefined,
  deletion?: TenantDeletion,
): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.post(
    '/v1/tenants',
    describeRoute({
      operationId: 'createTenant',
      tags: ['tenants'],
      description: 'Needs the admin key (DSH_ADMIN_KEY) as the bearer token. The API key is returned once.',
      requestBody: jsonRequest(CreateTenant),
      responses: {
        201: jsonResponse('Created', TenantCreated),
        401: jsonResponse('Wrong admin key', ErrorBody),
        403: jsonResponse('No admin key configured', ErrorBody),
      },
    }),
    adminAuth(adminKey),
    jsonBody(CreateTenant),
    async (c) => {
      const { name } = c.get('body') as v.InferOutput<typeof CreateTenant>;
      const tenant = await tenants.createTenant(name);
      return c.json({ id: tenant.id, name: tenant.name, apiKey: tenant.apiKey, keyId: tenant.keyId }, 201);
    },
  );
  app.get(
    '/v1/tenants',
    describeRoute({
      operationId: 'listTenants',
      tags: ['tenants'],
      description: 'Needs the admin key (DSH_ADMIN_KEY) as the bearer token. Keys are never listed.',
      responses: {
        200: jsonResponse('Every tenant', TenantList),
        401: jsonResponse('Wrong admin key', ErrorBody),
        403: jsonResponse('No admin key configured', ErrorBody),
      },
    }),
    adminAuth(adminKey),
    async (c) => c.json({ tenants: await tenants.listTenants() }),
  );
  app.get(
    '/v1/tenants/:id',
    describeRoute({
      operationId: 'getTenant',
      tags: ['tenants'],
      description:
        'Needs the admin key. One tenant and its state (active, deleting, deleted); while deleting, `remaining` counts what is left by kind.',
      responses: { 200: jsonResponse('The tenant', TenantView), ...adminErrors },
    }),
    adminAuth(adminKey),
    async (c) => {
      const id = c.req.param('id');
      const tenant = await (deletion?.status(id) ?? tenants.getTenant(id));
      if (tenant === undefined) throw noTenant(id);
      return c.json(tenant);
    },
  );
  if (deletion !== undefined)
    app.delete(
      '/v1/tenants/:id',
      describeRoute({
        operationId: 'deleteTenant',
        tags: ['tenants'],
        description:
          'Needs the admin key. Every key of the tenant is refused from the next request; its agents (with their containers and workspaces), plugins, skills, egress settings and secrets, schedules and logs are removed in the background, resumed after a restart. Follow it with GET /v1/tenants/:id (state deleting, then deleted). Deleting a tenant again answers its current state.',
        responses: { 202: jsonResponse('Being deleted (or already deleted)', TenantView), ...adminErrors },
      }),
      adminAuth(adminKey),
      async (c) => {
        const id = c.req.param('id');
        const tenant = await deletion.delete(id);
        if (tenant === undefined) throw noTenant(id);
        return c.json(tenant, 202);
      },
    );
  return app;
};
