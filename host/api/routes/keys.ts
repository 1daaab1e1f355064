// API keys over HTTP, two doors onto the same store calls (TenantStore, host/store/tenants-port.ts):
// the tenant's own keys by its own key (GET/POST /v1/keys, DELETE /v1/keys/:keyId) and any
// tenant's keys by the admin key (…/v1/tenants/:id/keys…). A key is shown once, at creation.
// Invariants: a tenant reaches only its own keys (another tenant's key id answers 404 like an unknown
// one); a tenant revokes its last live key only with `?lastKey=true` (409 otherwise: it would lock
// itself out), the admin always may; a revocation is refused from the very next request, in every
// replica hearing the wake-up bus (tenant-keys.ts).
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import type * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import type { ApiKeyInfo, RevokeOutcome, TenantStore } from '../../store/index.ts';
import { adminAuth } from '../auth.ts';
import { jsonBody, jsonRequest, jsonResponse, queryOf } from '../body.ts';
import type { ApiEnv } from '../env.ts';
import { ApiKeyList, CreateKey, ErrorBody, KeyCreated, RevokeKeyQuery } from '../schemas.ts';

const noKey = (keyId: string): SandboxError =>
  new SandboxError('NOT_FOUND', `No live key ${keyId} for this tenant.`, { data: { keyId } });

/** 204 for a revoked key; 404 and 409 say why not. */
const revokeAnswer = (outcome: RevokeOutcome, keyId: string): void => {
  if (outcome === 'unknown') throw noKey(keyId);
  if (outcome === 'last')
    throw new SandboxError(
      'CONFLICT',
      "This is the tenant's last live key: revoking it locks the tenant out. Create another key first, or add ?lastKey=true.",
      { data: { keyId } },
    );
};

const created = (key: { keyId: string; apiKey: string }, body: v.InferOutput<typeof CreateKey>) => ({
  id: key.keyId,
  apiKey: key.apiKey,
  ...(body.name === undefined ? {} : { name: body.name }),
  ...(body.expiresAt === undefined ? {} : { expiresAt: body.expiresAt }),
});

const listed = (keys: ApiKeyInfo[]) => ({ keys });

const keyResponses = {
  201: jsonResponse('Created; `apiKey` is shown this once', KeyCreated),
  400: jsonResponse('A name that is empty or too long, or an expiry not in the future', ErrorBody),
};

/** GET/POST /v1/keys, DELETE /v1/keys/:keyId: the tenant's own keys (mounted behind tenant auth). */
export const ownKeyRoutes = (tenants: TenantStore): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  app.get(
    '/v1/keys',
    describeRoute({
      operationId: 'listOwnKeys',
      tags: ['keys'],
      description: "The calling tenant's API keys, revoked and expired ones included (never a key itself).",
      responses: { 200: jsonResponse('Its keys, oldest first', ApiKeyList) },
    }),
    async (c) => c.json(listed(await tenants.listKeys(c.get('tenant').id))),
  );
  app.post(
    '/v1/keys',
    describeRoute({
      operationId: 'createOwnKey',
      tags: ['keys'],
      description:
        'A further key for the calling tenant (rotation: create, move clients, revoke the old one).',
      requestBody: jsonRequest(CreateKey),
      responses: keyResponses,
    }),
    jsonBody(CreateKey),
    async (c) => {
      const body = c.get('body') as v.InferOutput<typeof CreateKey>;
      return c.json(created(await tenants.createKey(c.get('tenant').id, body), body), 201);
    },
  );
  app.delete(
    '/v1/keys/:keyId',
    describeRoute({
      operationId: 'revokeOwnKey',
      tags: ['keys'],
      description:
        "Revokes one of the calling tenant's keys; it is refused from the next request. The last live key only with ?lastKey=true.",
      parameters: [{ name: 'lastKey', in: 'query', schema: { type: 'string', enum: ['true', 'false'] } }],
      responses: {
        204: { description: 'Revoked' },
        404: jsonResponse('No such live key for this tenant', ErrorBody),
        409: jsonResponse("The tenant's last live key, and lastKey=true was not given", ErrorBody),
      },
    }),
    async (c) => {
      const { lastKey } = queryOf(RevokeKeyQuery, c.req.query());
      const keyId = c.req.param('keyId');
      revokeAnswer(
        await tenants.revokeTenantKey(c.get('tenant').id, keyId, { allowLast: lastKey === 'true' }),
        keyId,
      );
      return c.body(null, 204);
    },
  );
  return app;
};

const adminResponses = {
  401: jsonResponse('Wrong admin key', ErrorBody),
  403: jsonResponse('No admin key configured', ErrorBody),
  404: jsonResponse('No such tenant (or key of it)', ErrorBody),
};

/** The same by the admin key, for any tenant: …/v1/tenants/:id/keys. */
export const adminKeyRoutes = (tenants: TenantStore, adminKey: string | undefined): Hono<ApiEnv> => {
  const app = new Hono<ApiEnv>();
  const tenantId = async (id: string): Promise<string> => {
    if ((await tenants.getTenant(id)) === undefined)
      throw new SandboxError('NOT_FOUND', `No tenant ${id}.`, { data: { tenantId: id } });
    return id;
  };
  app.get(
    '/v1/tenants/:id/keys',
    describeRoute({
      operationId: 'listTenantKeys',
      tags: ['tenants'],
      description: "Needs the admin key. The tenant's API keys, revoked and expired ones included.",
      responses: { 200: jsonResponse('Its keys, oldest first', ApiKeyList), ...adminResponses },
    }),
    adminAuth(adminKey),
    async (c) => c.json(listed(await tenants.listKeys(await tenantId(c.req.param('id'))))),
  );
  app.post(
    '/v1/tenants/:id/keys',
    describeRoute({
      operationId: 'createTenantKey',
      tags: ['tenants'],
      description: 'Needs the admin key. A further key for an active tenant.',
      requestBody: jsonRequest(CreateKey),
      responses: { ...keyResponses, ...adminResponses },
    }),
    adminAuth(adminKey),
    jsonBody(CreateKey),
    async (c) => {
      const body = c.get('body') as v.InferOutput<typeof CreateKey>;
      return c.json(created(await tenants.createKey(c.req.param('id'), body), body), 201);
    },
  );
  app.delete(
    '/v1/tenants/:id/keys/:keyId',
    describeRoute({
      operationId: 'revokeTenantKey',
      tags: ['tenants'],
      description:
        "Needs the admin key. Revokes one of the tenant's keys (its last one too); refused from the next request.",
      responses: { 204: { description: 'Revoked' }, ...adminResponses },
    }),
    adminAuth(adminKey),
    async (c) => {
      const keyId = c.req.param('keyId');
      revokeAnswer(await tenants.revokeTenantKey(c.req.param('id'), keyId, { allowLast: true }), keyId);
      return c.body(null, 204);
    },
  );
  return app;
};
