// The Hono application of the control plane: middleware (request id, shutdown gate, body limits,
// timeouts, auth, per-tenant concurrency), the v1 routes, /openapi.json generated from the same
// valibot schemas that validate, and the one error handler (./errors.ts).
import type { BlockList } from 'node:net';
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { requestId } from 'hono/request-id';
import { routePath } from 'hono/route';
import { timeout } from 'hono/timeout';
import { describeRoute, generateSpecs } from 'hono-openapi';
import type { AgentService } from '../agents/service.ts';
import { consoleRoutes } from '../console/index.ts';
import type { EgressSettings } from '../egress/settings.ts';
import { SandboxError } from '../errors.ts';
import type { SkillCatalog } from '../skills/catalog.ts';
import type { Store, TenantStore } from '../store/index.ts';
import type { ScheduleService } from '../tools/builtin/index.ts';
import { createClientAudit } from './audit.ts';
import { bearerToken, tenantAuth } from './auth.ts';
import { type AuthThrottle, createAuthThrottle, keyAttemptsOf } from './auth-throttle.ts';
import { clientSource } from './client-address.ts';
import { type ConnectionGuard, claimConnection, keepRefusalBody, refuseStrayUpgrade } from './connections.ts';
import type { ApiEnv } from './env.ts';
import { errorBody, errorHandler } from './errors.ts';
import { createFairScheduler, type FairScheduler } from './fair.ts';
import { createLifecycle, type Lifecycle, refuseWhenShuttingDown } from './lifecycle.ts';
import { createTenantLimiter, tenantConcurrency } from './limits.ts';
import { createMetrics, type Metrics, withLogUsage } from './metrics.ts';
import { finishDocument, type OpenApiDocument } from './openapi.ts';
import { agentRoutes } from './routes/agents.ts';
import { callRoutes } from './routes/calls.ts';
import { egressRoutes } from './routes/egress.ts';
import { eventRoutes } from './routes/events.ts';
import { execRoutes } from './routes/exec.ts';
import { fileRemoveRoutes } from './routes/file-remove.ts';
import { fileRoutes } from './routes/files.ts';
import { isMcpStream, mcpRoutes } from './routes/mcp.ts';
import { mcpServerRoutes } from './routes/mcp-servers.ts';
import { pluginRoutes } from './routes/plugins.ts';
import { requestRoutes } from './routes/requests.ts';
import { scheduleRoutes } from './routes/schedules.ts';
import { sessionRoutes } from './routes/session.ts';
import { skillRoutes } from './routes/skills.ts';
import { systemRoutes } from './routes/system.ts';
import { teamRoutes } from './routes/teams.ts';
import { tenantRoutes } from './routes/tenants.ts';
import { terminalControlRoutes } from './routes/terminal-control.ts';
import { terminalRoutes } from './routes/terminals.ts';
import { auditUploads } from './routes/upload-audit.ts';
import { usageRoutes } from './routes/usage.ts';

export interface ApiLimits {
  /** Largest JSON request body. Default 1 MiB. */
  maxJsonBytes: number;
  /** Largest file or archive upload. Default 64 MiB. */
  maxUploadBytes: number;
  /** Requests of one tenant in flight at once (streams included). Default 16. */
  tenantConcurrency: number;
  /** Deadline of ordinary requests (not call batches, not streams). Default 30 s. */
  requestTimeoutMs: number;
  /** Deadline of one call batch; the batch is cancelled after it. Default 10 min. */
  callTimeoutMs: number;
  /** Terminal WebSockets of one tenant open at once. Default 32. */
  tenantTerminals: number;
  /** Largest page of events (and step of an event stream) in bytes of event JSON. Default 1 MiB. */
  eventPageBytes: number;
  /** Main-thread time heavy requests may use per event-loop turn before they wait (./fair.ts); 0: off. Default 4 ms. */
  fairTurnMs: number;
}

export const DEFAULT_LIMITS: ApiLimits = {
  maxJsonBytes: 1024 * 1024,
  maxUploadBytes: 64 * 1024 * 1024,
  tenantConcurrency: 16,
  requestTimeoutMs: 30_000,
  callTimeoutMs: 600_000,
  tenantTerminals: 32,
  eventPageBytes: 1024 * 1024,
  fairTurnMs: 4,
};

export interface AppDeps {
  startedAt: number;
  version: string;
  /** With `search`, GET /v1/agents/:id/usage and GET /v1/admin/workspaces are served. */
  store: Pick<Store, 'tenants' | 'events' | 'requests'> & Partial<Pick<Store, 'search'>>;
  agents: AgentService;
  /** Admin key for POST /v1/tenants; none turns that route off. */
  adminKey?: string;
  /** A key that opens GET /metrics and nothing else (the admin key opens it too); with neither, /metrics is off. */
  metricsKey?: string;
  /** Failed key attempts per source (./auth-throttle.ts). Default: one with its defaults. */
  authThrottle?: AuthThrottle;
  /** Proxies whose X-Forwarded-For names the client (./client-address.ts trustedProxies); default none. */
  trustedProxies?: BlockList;
  limits?: Partial<ApiLimits>;
  /** Default: a fresh registry. Pass one to share it with the agent service's observe hook. */
  metrics?: Metrics;
  /** Default: a fresh lifecycle (never shutting down unless begin() is called). */
  lifecycle?: Lifecycle;
  /** Live isolate worker processes, for /metrics. */
  isolateWorkers?: () => number;
  /** The warm pool's configured size and the sandboxes ready in it now, for /metrics. */
  pool?: () => { size: number; available: number };
  /** Bytes used and free on the file system holding the workspaces, for /metrics. */
  workspaceDisk?: () => { used: number; free: number };
  /** The HTTP server's connection admission (serve.ts); authenticated requests claim their connection. */
  connections?: ConnectionGuard;
  /** The agents' schedules (GET and DELETE /v1/agents/:id/schedules); none leaves those routes out. */
  schedules?: ScheduleService;
  /** Browser origins admitted to the MCP endpoints besides this machine's own (DSH_MCP_ORIGINS). */
  mcpOrigins?: readonly string[];
  /** The tenants' skill catalogs (/v1/skills); none leaves those routes out. */
  skills?: SkillCatalog;
  /** The tenants' egress settings (/v1/egress); none leaves those routes out. */
  egress?: EgressSettings;
  /** Turns of heavy requests on the event loop. Default: one with limits.fairTurnMs. */
  fair?: FairScheduler;
}

/**
 * Routes without the generic request deadline: call batches and client commands (their own
 * callTimeoutMs; a command its own timeoutMs within it), event streams, and uploads, which are
 * bounded by size and whose time depends on the client's bandwidth
 * (the HTTP server's requestTimeout still ends a body that never arrives); a deadline there would
 * answer 504 while the handler kept writing. Downloads keep it: they answer with a stream at once.
 */
const isStreamingRoute = (method: string, path: string): boolean =>
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
const tenantOf = (tenants: Pick<TenantStore, 'verifyKey'>, header: string | undefined) => {
  try {
    return tenants.verifyKey(bearerToken(header));
  } catch {
    return undefined;
  }
};

/** DELETE routes that do work in the sandbox (remove files, close a terminal) rather than stop work. */
const isSandboxWork = (path: string): boolean => path.endsWith('/files') || /\/terminals\/[^/]*$/.test(path);

export const createApp = (deps: AppDeps): Hono<ApiEnv> => {
  const limits = { ...DEFAULT_LIMITS, ...deps.limits };
  const metrics = withLogUsage(deps.metrics ?? createMetrics(), () => deps.store.events.usage());
  const lifecycle = deps.lifecycle ?? createLifecycle();
  const throttle = deps.authThrottle ?? createAuthThrottle();
  metrics.gauge('dsh_sandboxes_live', 'Sandboxes this control plane holds a handle to.', () =>
    deps.agents.liveSandboxes(),
  );
  metrics.gauge('dsh_call_batches_in_flight', 'Call batches running now.', () => deps.agents.inFlight());
  metrics.gauge('dsh_isolate_workers', 'Live isolate worker processes.', () => deps.isolateWorkers?.() ?? 0);
  const pool = deps.pool;
  metrics.gauge('dsh_warm_pool_size', 'Sandboxes the warm pool keeps started and unassigned.', () =>
    pool === undefined ? 0 : pool().size,
  );
  metrics.gauge('dsh_warm_pool_available', 'Sandboxes ready in the warm pool now.', () =>
    pool === undefined ? 0 : pool().available,
  );
  metrics.labelledGauge(
    'dsh_sandboxes',
    'Sandboxes by state: assigned to an agent (a handle held here) or warm (ready in the pool).',
    'state',
    () => ({ assigned: deps.agents.liveSandboxes(), warm: pool === undefined ? 0 : pool().available }),
  );
  metrics.gauge(
    'dsh_host_requests_pending',
    'Host requests (approvals, remote tool calls, questions, …) waiting for an answer.',
    () => deps.store.requests.pending(),
  );
  const disk = deps.workspaceDisk;
  if (disk !== undefined) {
    metrics.labelledGauge(
      'dsh_workspace_disk_bytes',
      'The file system holding the workspaces: bytes used and free.',
      'kind',
      () => disk(),
    );
  }
  const connections = deps.connections;
  if (connections !== undefined) {
    const stat = (key: keyof ReturnType<ConnectionGuard['stats']>) => () => connections.stats()[key];
    metrics.gauge('dsh_connections_open', 'Open HTTP connections.', stat('open'));
    metrics.gauge(
      'dsh_connections_unauthenticated',
      'Open HTTP connections that have not presented a valid key yet.',
      stat('unauthenticated'),
    );
    metrics.gauge(
      'dsh_connections_evicted',
      'Unauthenticated connections closed since start to make room for newer ones.',
      stat('evicted'),
    );
    metrics.gauge(
      'dsh_connections_silent',
      'Connections closed since start for sending nothing in time.',
      stat('silent'),
    );
  }

  metrics.gauge('dsh_auth_failures', 'Failed key attempts since start.', () => throttle.stats().failures);
  metrics.gauge(
    'dsh_auth_throttled',
    'Key attempts refused unchecked since start: their address had failed too often (AUTH_THROTTLED).',
    () => throttle.stats().refused,
  );

  const app = new Hono<ApiEnv>();
  app.onError(errorHandler({ onError: (code) => metrics.error(code) }));
  app.notFound((c) => {
    metrics.error('NOT_FOUND');
    return c.json(errorBody('NOT_FOUND', `No route ${c.req.method} ${c.req.path}.`), 404);
  });
  app.use(keepRefusalBody);
  app.use(async function httpMetrics(c, next) {
    const start = performance.now();
    c.set('openStream', metrics.stream);
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
  // Every key check of the request counts against its source (./auth.ts checkKey).
  app.use(async function keyAttempts(c, next) {
    c.set('keyAttempts', keyAttemptsOf(throttle, clientSource(c.env, deps.trustedProxies)));
    await next();
  });
  const fair = deps.fair ?? createFairScheduler({ budgetMs: limits.fairTurnMs });
  // A heavy request waits its turn before the rest of its work: what runs before admission (the
  // middleware, the body) is ~half of its main-thread time, and a burst of it held light requests
  // up. Its key is checked first (remembered: a hash and a lookup) and its connection claimed, so
  // it waits in its tenant's queue and its connection no longer counts as unauthenticated (those
  // give way to newer ones); one without a valid key does not wait: tenantAuth refuses it.
  app.use(async function fairEntry(c, next) {
    if (takesTurns(c) && !c.var.keyAttempts.throttled()) {
      const tenant = tenantOf(deps.store.tenants, c.req.header('authorization'));
      if (tenant !== undefined) {
        claimConnection(connections, c, tenant.id);
        await fair.turn(tenant.id);
      }
    }
    await next();
  });
  app.route(
    '/',
    systemRoutes({
      version: deps.version,
      startedAt: deps.startedAt,
      metrics,
      lifecycle,
      keys: {
        ...(deps.adminKey === undefined ? {} : { adminKey: deps.adminKey }),
        ...(deps.metricsKey === undefined ? {} : { metricsKey: deps.metricsKey }),
      },
    }),
  );

  app.use('/v1/*', refuseWhenShuttingDown(lifecycle));
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
    // Uploads are PUTs bounded by their own limit; PUT /v1/egress is JSON like any other body.
    if ((method === 'PUT' && c.req.path !== '/v1/egress') || method === 'GET' || method === 'HEAD')
      return next();
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
  app.route('/', tenantRoutes(deps.store.tenants, deps.adminKey));

  // Terminal WebSockets authenticate themselves (browsers cannot send the header) and hold no
  // request slot while open; registered first, they answer before the header auth below.
  app.route(
    '/',
    terminalRoutes(deps.agents, deps.store.tenants, {
      maxSocketsPerTenant: limits.tenantTerminals,
      metrics,
      ...(connections === undefined ? {} : { connections }),
    }),
  );
  // Past the terminal routes nothing upgrades: a stray upgrade's answer would never be read.
  app.use('/v1/agents/*', refuseStrayUpgrade);
  // DELETE takes no slot: it is how a tenant stops what holds its slots (long calls, streams);
  // except the DELETEs that work in the sandbox and stop nothing (a file tree removed, a terminal
  // closed): those are bounded like any other request. Nor does an MCP client's notification
  // stream take one, open for as long as it is connected (own cap).
  const concurrency = tenantConcurrency(createTenantLimiter(limits.tenantConcurrency));
  const tenantScoped = (path: string): void => {
    app.use(path, tenantAuth(deps.store.tenants));
    app.use(path, async function tenantConnection(c, next) {
      claimConnection(connections, c, c.get('tenant').id);
      await next();
    });
    app.use(path, async function tenantSlot(c, next) {
      return (c.req.method === 'DELETE' && !isSandboxWork(c.req.path)) ||
        isMcpStream(c.req.method, c.req.path)
        ? next()
        : concurrency(c, next);
    });
    // After admission (limits answer at once), a heavy request's work waits its tenant's turn.
    app.use(path, async function fairTurn(c, next) {
      if (takesTurns(c)) await fair.turn(c.get('tenant').id);
      await next();
    });
  };
  // `/v1/agents/*` matches `/v1/agents` itself too: one registration, so one slot per request.
  tenantScoped('/v1/agents/*');
  app.route('/', agentRoutes(deps.agents));
  app.route('/', callRoutes(deps.agents, limits.callTimeoutMs));
  app.route('/', eventRoutes(deps.agents, deps.store.events, lifecycle, limits.eventPageBytes));
  // What the client does to a sandbox beside the tools (uploads, a command, a delete, a terminal) is
  // in the agent's log (./audit.ts).
  const audit = createClientAudit(deps.store.events);
  app.use('/v1/agents/:id/files', auditUploads(deps.agents, audit, 'file_write'));
  app.use('/v1/agents/:id/archive', auditUploads(deps.agents, audit, 'archive_upload'));
  app.route('/', fileRoutes(deps.agents, limits.maxUploadBytes));
  app.route('/', execRoutes(deps.agents, audit, limits.callTimeoutMs));
  app.route('/', fileRemoveRoutes(deps.agents, audit));
  app.route('/', terminalControlRoutes(deps.agents, audit));
  app.route('/', requestRoutes(deps.agents, deps.store.requests));
  const { callTimeoutMs } = limits;
  app.route(
    '/',
    mcpRoutes({
      agents: deps.agents,
      events: deps.store.events,
      lifecycle,
      version: deps.version,
      callTimeoutMs,
      ...(deps.mcpOrigins === undefined ? {} : { origins: deps.mcpOrigins }),
    }),
  );
  app.route('/', pluginRoutes(deps.agents));
  app.route('/', sessionRoutes(deps.agents));
  const { search } = deps.store;
  if (search !== undefined)
    app.route('/', usageRoutes(deps.agents, { events: deps.store.events, search }, deps.adminKey));
  app.route('/', teamRoutes(deps.agents));
  if (deps.schedules !== undefined) app.route('/', scheduleRoutes(deps.agents, deps.schedules));
  app.route('/', mcpServerRoutes(deps.agents));
  if (deps.skills !== undefined) {
    tenantScoped('/v1/skills/*');
    app.route('/', skillRoutes(deps.skills));
  }
  if (deps.egress !== undefined) {
    tenantScoped('/v1/egress');
    app.route('/', egressRoutes(deps.egress));
  }

  // The console (/console): pages over this same API, which it calls in-process (host/console).
  app.route('/', consoleRoutes({ fetch: (request, env) => app.fetch(request, env) }));

  let document: Promise<OpenApiDocument> | undefined;
  app.get(
    '/openapi.json',
    describeRoute({
      operationId: 'openapi',
      tags: ['system'],
      security: [],
      responses: {
        200: { description: 'This description (OpenAPI 3.1)', content: { 'application/json': {} } },
      },
    }),
    async (c) => {
      document ??= generateSpecs(
        app,
        {
          documentation: {
            openapi: '3.1.0',
            info: {
              title: 'dsh-sandbox control plane',
              version: deps.version,
              description:
                'Runs AI agents\' tool calls in isolation. Errors: { "error": { "code", "message", "data"? } } (data: a client error\'s structured detail).',
            },
            components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
            security: [{ bearer: [] }],
          },
        },
        c,
      ).then((specs) => finishDocument(specs as OpenApiDocument, { isDeadlineFree: isStreamingRoute }));
      return c.json(await document);
    },
  );
  return app;
};
