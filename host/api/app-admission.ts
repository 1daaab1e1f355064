// The middleware of the control plane app (./app.ts) in the order createApp registers it: the error
// and not-found answers, HTTP metrics, request id, key attempts, a heavy request's early turn
// (useEntry, with a forwarded request's replica signature checked first: ./forward/verify.ts); the
// shutdown gate, bodies without a content coding, JSON body limit and request deadline of /v1
// (useV1Limits); and a tenant-scoped prefix's auth, connection claim, route to the owning replica
// (./forward/route.ts), request slot and fair turn (useTenantScope).
// Invariants: a request holds at most one tenant slot (one registration per prefix, one limiter per
// app); heavy work (./fair.ts) waits its turn only after its key is checked; DELETEs that stop work
// and MCP notification streams take no slot.
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { requestId } from 'hono/request-id';
import { routePath } from 'hono/route';
import { timeout } from 'hono/timeout';
import { SandboxError } from '../errors.ts';
import type { TenantStore } from '../store/index.ts';
import type { AppState } from './app-deps.ts';
import { bearerToken, tenantAuth } from './auth.ts';
import { keyAttemptsOf } from './auth-throttle.ts';
import { clientSource } from './client-address.ts';
import { claimConnection, keepRefusalBody } from './connections.ts';
import type { ApiEnv } from './env.ts';
import { errorBody, errorHandler } from './errors.ts';
import { routeSlot } from './forward/route.ts';
import { verifyForwarded } from './forward/verify.ts';
import { refuseWhenShuttingDown } from './lifecycle.ts';
import { isMcpStream } from './routes/mcp.ts';

/**
 * Routes without the generic request deadline: call batches and client commands (their own
 * callTimeoutMs; a command its own timeoutMs within it), event streams, and uploads, which are
 * bounded by size and whose time depends on the client's bandwidth
 * (the HTTP server's requestTimeout still ends a body that never arrives); a deadline there would
 * answer 504 while the handler kept writing. Downloads keep it: they answer with a stream at once.
 */
export const isStreamingRoute = (method: string, path: string): boolean =>
  (method === 'POST' && (path.endsWith('/calls') || path.endsWith('/exec'))) ||
  (method === 'GET' && path.endsWith('/events')) ||
  path.endsWith('/mcp') ||
  (method === 'PUT' &&
    (path.endsWith('/files') || path.endsWith('/archive') || path.startsWith('/v1/skills/')));

/**
 * Requests whose work is heavy on the main thread (a batch of tool calls: reading and checking the
 * body, the pipeline, a program's compile and its result) wait their turn (./fair.ts). Everything
 * else (reads, health, deletes) is light and never waits for one. Only requests that came through
 * the HTTP server take turns: an in-process one (app.request, the console's calls) runs inside the
 * turn of whatever made it, and turns are handed out only when the event loop comes round.
 */
const takesTurns = (c: Context): boolean =>
  c.req.method === 'POST' &&
  (c.env as { incoming?: unknown } | undefined)?.incoming !== undefined &&
  (c.req.path.endsWith('/calls') || c.req.path.endsWith('/exec') || c.req.path.endsWith('/mcp'));

/** The tenant of a valid bearer key; undefined for anything else (tenantAuth answers that). */
const tenantOf = async (tenants: Pick<TenantStore, 'verifyKey'>, header: string | undefined) => {
  try {
    return await tenants.verifyKey(bearerToken(header));
  } catch {
    return undefined;
  }
};

/** DELETE routes that do work in the sandbox (remove files, close a terminal) rather than stop work. */
const isSandboxWork = (path: string): boolean => path.endsWith('/files') || /\/terminals\/[^/]*$/.test(path);

/** The error answers and the middleware every request passes, before any route. */
export function useEntry(app: Hono<ApiEnv>, state: AppState): void {
  const { deps, metrics, throttle, fair, connections } = state;
  app.onError(errorHandler({ onError: (code) => metrics.error(code) }));
  app.notFound((c) => {
    metrics.error('NOT_FOUND');
    return c.json(errorBody('NOT_FOUND', `No route ${c.req.method} ${c.req.path}.`), 404);
  });
  app.use(keepRefusalBody);
  app.use(async function httpMetrics(c, next) {
    const start = performance.now();
    c.set('openStream', metrics.stream);
    c.set('activity', deps.activity);
    await next();
    metrics.http({
      method: c.req.method,
      // The pattern that answered (bounded), never the path.
      route: routePath(c),
      status: c.res.status,
      seconds: (performance.now() - start) / 1000,
      ...(c.get('tenant') === undefined ? {} : { tenant: c.get('tenant').id }),
    });
  });
  app.use(requestId());
  // A request another replica forwarded is signed (or refused) before its address is read.
  if (deps.replicas !== undefined) app.use(verifyForwarded({ key: deps.replicas.key }));
  // Every key check of the request counts against its source (./auth.ts checkKey).
  app.use(async function keyAttempts(c, next) {
    c.set('keyAttempts', keyAttemptsOf(throttle, clientSource(c.env, deps.trustedProxies)));
    await next();
  });
  // A heavy request waits its turn before the rest of its work: what runs before admission (the
  // middleware, the body) is ~half of its main-thread time, and a burst of it held light requests
  // up. Its key is checked first (remembered: a hash and a lookup) and its connection claimed, so
  // it waits in its tenant's queue and its connection no longer counts as unauthenticated (those
  // give way to newer ones); one without a valid key does not wait: tenantAuth refuses it.
  app.use(async function fairEntry(c, next) {
    if (takesTurns(c) && !c.var.keyAttempts.throttled()) {
      const tenant = await tenantOf(deps.store.tenants, c.req.header('authorization'));
      if (tenant !== undefined) {
        claimConnection(connections, c, tenant.id);
        await fair.turn(tenant.id);
      }
    }
    await next();
  });
}

/**
 * A body in a content coding (gzip, br…) would be parsed or stored as its coded bytes: the service
 * decodes none, so it refuses it rather than keep a file the client never meant to send.
 */
const identityBodies: MiddlewareHandler = async function identityBodies(c, next) {
  const coding = c.req.header('content-encoding')?.trim().toLowerCase();
  if (coding !== undefined && coding !== '' && coding !== 'identity')
    throw new SandboxError(
      'BAD_REQUEST',
      `Content-Encoding ${JSON.stringify(coding.slice(0, 40))} is not decoded here: send the body uncompressed, without Content-Encoding.`,
    );
  await next();
};

/** The shutdown gate, the content coding, the JSON body limit and the generic deadline of every /v1 route. */
export function useV1Limits(app: Hono<ApiEnv>, state: AppState): void {
  const { limits, lifecycle } = state;
  app.use('/v1/*', refuseWhenShuttingDown(lifecycle));
  app.use('/v1/*', identityBodies);
  const jsonBodyLimit = bodyLimit({
    maxSize: limits.maxJsonBytes,
    onError: () => {
      throw new SandboxError(
        'PAYLOAD_TOO_LARGE',
        `The request body is larger than ${limits.maxJsonBytes} bytes.`,
      );
    },
  });
  app.use('/v1/*', async function jsonLimit(c, next) {
    const method = c.req.method;
    // Uploads are PUTs bounded by their own limit; PUT /v1/egress and /v1/settings are JSON like any other body.
    const jsonPut = c.req.path === '/v1/egress' || c.req.path === '/v1/settings';
    if ((method === 'PUT' && !jsonPut) || method === 'GET' || method === 'HEAD') return next();
    // A declared length settles it without the body: hono's bodyLimit would ask for the body
    // first, which turns @hono/node-server's request into a whole web Request over a stream.
    const length = c.req.header('content-length');
    if (length !== undefined && c.req.header('transfer-encoding') === undefined) {
      if (Number.parseInt(length, 10) > limits.maxJsonBytes) return jsonBodyLimit(c, next);
      return next();
    }
    return jsonBodyLimit(c, next);
  });
  const deadline = timeout(
    limits.requestTimeoutMs,
    () => new HTTPException(504, { message: `The request took longer than ${limits.requestTimeoutMs} ms.` }),
  );
  app.use('/v1/*', async function requestDeadline(c, next) {
    return isStreamingRoute(c.req.method, c.req.path) ? next() : deadline(c, next);
  });
}

/**
 * Admits requests under `path` for a tenant: its key, its connection claimed, a request slot of
 * `concurrency` (one limiter for the whole app), then a heavy request's turn.
 */
export function useTenantScope(
  app: Hono<ApiEnv>,
  state: AppState,
  concurrency: MiddlewareHandler<ApiEnv>,
  path: string,
): void {
  const { deps, fair, connections } = state;
  app.use(path, tenantAuth(deps.store.tenants));
  app.use(path, async function tenantConnection(c, next) {
    claimConnection(connections, c, c.get('tenant').id);
    await next();
  });
  // Another replica's agent is forwarded there before it takes a slot or a turn here.
  const forward = routeSlot(deps.replicas);
  if (forward !== undefined) app.use(path, forward);
  app.use(path, async function tenantSlot(c, next) {
    return (c.req.method === 'DELETE' && !isSandboxWork(c.req.path)) || isMcpStream(c.req.method, c.req.path)
      ? next()
      : concurrency(c, next);
  });
  // After admission (limits answer at once), a heavy request's work waits its tenant's turn.
  app.use(path, async function fairTurn(c, next) {
    if (takesTurns(c)) await fair.turn(c.get('tenant').id);
    await next();
  });
}
