// Authentication: `Authorization: Bearer <key>`. Tenant keys are verified by the tenant store
// (SHA-256, constant-time compare); the admin key (config DSH_ADMIN_KEY) and the metrics key
// (DSH_METRICS_KEY) are compared here in constant time. Every 401 carries a WWW-Authenticate
// challenge (RFC 6750). Every key check goes through checkKey: a source that failed too often is
// answered 429 before its key is looked at, and a wrong key counts against it (./auth-throttle.ts).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { SandboxError } from '../errors.ts';
import type { Tenant, TenantStore } from '../store/index.ts';
import type { KeyAttempts } from './auth-throttle.ts';
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

/**
 * Runs one check of a key the request presented: refused (AUTH_THROTTLED) without running it when
 * the request's source failed too often; a check that finds no match (undefined) counts as a
 * failure. A key that is missing or malformed is no guess: callers parse it first (bearerToken).
 */
export const checkKey = async <T>(
  c: Context,
  verify: () => T | undefined | Promise<T | undefined>,
): Promise<T | undefined> => {
  const attempts = (c.var as { keyAttempts?: KeyAttempts }).keyAttempts;
  attempts?.admit();
  const found = await verify();
  if (found === undefined) attempts?.failed();
  return found;
};

/** The tenant whose key `token` is; 401 (or 429, see checkKey) otherwise. */
export const tenantOfKey = async (
  c: Context,
  tenants: Pick<TenantStore, 'verifyKey'>,
  token: string,
): Promise<Tenant> => {
  const tenant = await checkKey(c, () => tenants.verifyKey(token));
  if (tenant === undefined)
    throw unauthorized('The API key is unknown or revoked.', `${REALM}, error="invalid_token"`);
  return tenant;
};

export const tenantAuth = (tenants: TenantStore): MiddlewareHandler<ApiEnv> =>
  async function tenantAuth(c, next) {
    const token = bearerToken(c.req.header('authorization'));
    c.set('tenant', await tenantOfKey(c, tenants, token));
    c.set('keyLive', async () => (await tenants.verifyKey(token)) !== undefined);
    await next();
  };

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** True when `token` is one of `keys` (each compared in constant time, all of them always). */
const oneOf = (token: string, keys: readonly Buffer[]): true | undefined => {
  const given = digest(token);
  let match = false;
  for (const key of keys) match = timingSafeEqual(given, key) || match;
  return match ? true : undefined;
};

export const adminAuth = (adminKey: string | undefined): MiddlewareHandler<ApiEnv> => {
  const expected = adminKey === undefined ? undefined : [digest(adminKey)];
  return async function adminAuth(c, next) {
    const token = bearerToken(c.req.header('authorization'));
    if (expected === undefined) {
      throw new SandboxError(
        'FORBIDDEN',
        'The admin routes (/v1/tenants) are off: set DSH_ADMIN_KEY, or create tenants with `dsh-sandbox tenant create <name>`.',
      );
    }
    if ((await checkKey(c, () => oneOf(token, expected))) === undefined) {
      throw unauthorized('The admin key is wrong.', `${REALM}, error="invalid_token"`);
    }
    await next();
  };
};

/**
 * GET /metrics: the metrics key (DSH_METRICS_KEY, for a scraper that should hold nothing more) or
 * the admin key (the operator view reads it). With neither configured, /metrics is off (403): what
 * it shows (tenant ids, traffic, load) is the operator's, not every client's.
 */
export const metricsAuth = (keys: { adminKey?: string; metricsKey?: string }): MiddlewareHandler<ApiEnv> => {
  const expected = [keys.metricsKey, keys.adminKey].filter((k) => k !== undefined).map(digest);
  return async function metricsAuth(c, next) {
    const token = bearerToken(c.req.header('authorization'));
    if (expected.length === 0)
      throw new SandboxError(
        'FORBIDDEN',
        '/metrics is off: set DSH_METRICS_KEY (or DSH_ADMIN_KEY) and scrape with it as the bearer token.',
      );
    if ((await checkKey(c, () => oneOf(token, expected))) === undefined)
      throw unauthorized('The metrics key is wrong.', `${REALM}, error="invalid_token"`);
    await next();
  };
};
