// Authentication: `Authorization: Bearer <key>`. Tenant keys are verified by the tenant store
// (SHA-256, constant-time compare); the admin key (config DSH_ADMIN_KEY) is compared here in
// constant time. Every 401 carries a WWW-Authenticate challenge (RFC 6750).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { SandboxError } from '../errors.ts';
import type { TenantStore } from '../store/index.ts';
import type { ApiEnv } from './env.ts';

const REALM = 'Bearer realm="dsh-sandbox"';

const unauthorized = (message: string, challenge: string): SandboxError =>
  new SandboxError('UNAUTHORIZED', message, { data: { wwwAuthenticate: challenge } });

/** The bearer token, or a 401 (missing) / 400-style challenge (wrong scheme). */
export const bearerToken = (header: string | undefined): string => {
  if (header === undefined || header.trim() === '') {
    throw unauthorized('Send "Authorization: Bearer <api key>".', REALM);
  }
  const match = /^Bearer +([A-Za-z0-9._~+/=-]+) *$/i.exec(header);
  if (match === null) {
    throw unauthorized(
      'The Authorization header must be "Bearer <api key>".',
      `${REALM}, error="invalid_request"`,
    );
  }
  return match[1] as string;
};

export const tenantAuth = (tenants: TenantStore): MiddlewareHandler<ApiEnv> =>
  async function tenantAuth(c, next) {
    const tenant = tenants.verifyKey(bearerToken(c.req.header('authorization')));
    if (tenant === undefined) {
      throw unauthorized('The API key is unknown or revoked.', `${REALM}, error="invalid_token"`);
    }
    c.set('tenant', tenant);
    await next();
  };

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

export const adminAuth = (adminKey: string | undefined): MiddlewareHandler<ApiEnv> => {
  const expected = adminKey === undefined ? undefined : digest(adminKey);
  return async function adminAuth(c, next) {
    const token = bearerToken(c.req.header('authorization'));
    if (expected === undefined) {
      throw new SandboxError(
        'FORBIDDEN',
        'The admin routes (/v1/tenants) are off: set DSH_ADMIN_KEY, or create tenants with `dsh-sandbox tenant create <name>`.',
      );
    }
    if (!timingSafeEqual(digest(token), expected)) {
      throw unauthorized('The admin key is wrong.', `${REALM}, error="invalid_token"`);
    }
    await next();
  };
};
