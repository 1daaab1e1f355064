// API keys over HTTP, two doors onto the same store calls (TenantStore, host/store/tenants-port.ts):
// the tenant's own keys by its own key (GET/POST /v1/keys, DELETE /v1/keys/:keyId) and any
// tenant's keys by the admin key (…/v1/tenants/:id/keys…). A key is shown once, at creation.
// Invariants: a tenant reaches only its own keys (another tenant's key id answers 404 like an unknown
// one); a tenant revokes its last live key only with `?lastKey=true` (409 otherwise: it would lock
// itself out), the admin always may; a revocation is refused from the very next request, in every
// replica hearing the wake-up bus (tenant-keys.ts). Lists are paged like GET /v1/admin/workspaces
// (`limit`, `after` = the `next` of the page before); a page's `next` is opaque to clients: it
// carries the last key's createdAt and id, so paging goes on after that key was pruned.
import { Hono } from 'hono';
import { describeRoute } from 'hono-openapi';
import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import {
  KEY_PAGE_DEFAULT,
  KEY_PAGE_MAX,
  type KeyCursor,
  type KeyPageResult,
  MAX_ENDED_KEYS,
  type RevokeOutcome,
  type TenantStore,
} from '../../store/index.ts';
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

/** A page's `next` as clients see it: base64url of `<createdAt>.<keyId>`, opaque to them. */
export const cursorText = (cursor: KeyCursor): string =>
  Buffer.from(`${cursor.createdAt}.${cursor.id}`, 'utf8').toString('base64url');

/** The cursor `text` spells, or undefined unless it is one cursorText() made. */
export const cursorOf = (text: string): KeyCursor | undefined => {
  const match = /^(\d{1,15})\.(key_[A-Za-z0-9_-]{1,64})$/.exec(
    Buffer.from(text, 'base64url').toString('utf8'),
  );
  if (match === null) return undefined;
  const cursor = { createdAt: Number(match[1]), id: match[2] as string };
  return cursorText(cursor) === text ? cursor : undefined; // one spelling per cursor
};

/** The page GET /v1/keys (and the admin's list) asks for. */
const KeysQuery = v.object({
  after: v.optional(
    v.pipe(
      v.string(),
      v.maxLength(128, 'after is the `next` of a page before'),
      v.transform(cursorOf),
      v.check((c) => c !== undefined, 'after is the `next` of a page before'),
    ),
  ),
  limit: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{1,3}$/, `limit is 1-${KEY_PAGE_MAX}`),
      v.transform(Number),
      v.minValue(1, `limit is 1-${KEY_PAGE_MAX}`),
      v.maxValue(KEY_PAGE_MAX, `limit is 1-${KEY_PAGE_MAX}`),
    ),
  ),
});

/** The store's page for the request's query (BAD_REQUEST for a hostile one). */
const pageOf = (query: Record<string, string>) => {
  const { after, limit } = queryOf(KeysQuery, query);
  return { ...(after === undefined ? {} : { after }), limit: limit ?? KEY_PAGE_DEFAULT };
};

const listed = ({ keys, next }: KeyPageResult) => ({
  keys,
  ...(next === undefined ? {} : { next: cursorText(next) }),
});

const pageParameters = [
  { name: 'after', in: 'query', required: false, schema: { type: 'string' } },
  {
    name: 'limit',
    in: 'query',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: KEY_PAGE_MAX, default: KEY_PAGE_DEFAULT },
  },
] as const;

const pageDescription = `Oldest first, paged: \`limit\` 1-${KEY_PAGE_MAX} (default ${KEY_PAGE_DEFAULT}), \`after\` the \`next\` of the page before (absent on the last page). Revoked and expired keys are listed too, the ${MAX_ENDED_KEYS} that ended last (older ones are deleted when the tenant makes a key).`;

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
      description: `The calling tenant's API keys (never a key itself). ${pageDescription}`,
      parameters: [...pageParameters],
      responses: {
        200: jsonResponse('A page of its keys, oldest first', ApiKeyList),
        400: jsonResponse('Invalid page', ErrorBody),
      },
    }),
    async (c) => c.json(listed(await tenants.listKeyPage(c.get('tenant').id, pageOf(c.req.query())))),
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
      description: `Needs the admin key. The tenant's API keys. ${pageDescription}`,
      parameters: [...pageParameters],
      responses: {
        200: jsonResponse('A page of its keys, oldest first', ApiKeyList),
        400: jsonResponse('Invalid page', ErrorBody),
        ...adminResponses,
      },
    }),
    adminAuth(adminKey),
    async (c) => {
      const page = pageOf(c.req.query());
      return c.json(listed(await tenants.listKeyPage(await tenantId(c.req.param('id')), page)));
    },
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
