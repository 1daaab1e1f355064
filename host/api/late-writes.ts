// Writes that land after their tenant's deletion began. A request's key is checked when its headers
// arrive; its body and its write may come much later (a slow client, a queue of creates behind the
// quota), after the deletion listed the tenant's agents and purged its rows: an agent, a skill, egress
// settings with a sealed credential or settings then outlived a tenant reported `deleted`.
// Invariant: every route that makes a tenant-level row (POST /v1/agents, PUT /v1/skills/:name,
// PUT /v1/egress, PUT /v1/settings) reads its tenant's state after its write; one no longer active has
// its deletion run once more (TenantDeletion.again), which removes what the write made, and the
// client is answered as its key now is (401). The deletion marks the tenant before it lists or
// purges anything, so a write it ran before is purged by it, and one after is seen here.
import type { MiddlewareHandler } from 'hono';
import { SandboxError } from '../errors.ts';
import type { TenantStore } from '../store/index.ts';
import type { TenantDeletion } from '../tenants/deletion.ts';
import type { ApiEnv } from './env.ts';

const WRITES = new Set(['POST', 'PUT']);

export const refuseLateWrites = (
  tenants: Pick<TenantStore, 'getTenant'>,
  deletion: Pick<TenantDeletion, 'again'> | undefined,
): MiddlewareHandler<ApiEnv> =>
  async function refuseLateWrites(c, next) {
    await next();
    if (deletion === undefined || !WRITES.has(c.req.method)) return;
    const tenantId = c.get('tenant').id;
    if ((await tenants.getTenant(tenantId))?.state === 'active') return;
    void deletion.again(tenantId);
    throw new SandboxError(
      'UNAUTHORIZED',
      'The API key is unknown or revoked: its tenant is being deleted, and what this request wrote is removed with it.',
      { data: { wwwAuthenticate: 'Bearer realm="dsh-sandbox", error="invalid_token"' } },
    );
  };
