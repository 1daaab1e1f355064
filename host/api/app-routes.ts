// The v1 routes of the control plane app (./app.ts), mounted in the order that decides who answers
// (mountV1Routes), and /openapi.json, generated once from the same routes and schemas (mountOpenApi).
// Invariants: terminal WebSockets are mounted before the header auth (they authenticate themselves
// and hold no slot); nothing past them upgrades; each tenant-scoped prefix is registered once.
import type { Hono } from 'hono';
import { describeRoute, generateSpecs } from 'hono-openapi';
import { isStreamingRoute, useTenantScope } from './app-admission.ts';
import type { AppState } from './app-deps.ts';
import { createClientAudit } from './audit.ts';
import { refuseStrayUpgrade } from './connections.ts';
import type { ApiEnv } from './env.ts';
import { routeSlot } from './forward/route.ts';
import { refuseLateWrites } from './late-writes.ts';
import { createTenantLimiter, tenantConcurrency } from './limits.ts';
import { finishDocument, type OpenApiDocument } from './openapi.ts';
import { agentQuota } from './quotas.ts';
import { agentRoutes } from './routes/agents.ts';
import { callRoutes } from './routes/calls.ts';
import { checkpointRoutes } from './routes/checkpoints.ts';
import { egressRoutes } from './routes/egress.ts';
import { eventRoutes } from './routes/events.ts';
import { tenantExportRoutes } from './routes/events-export-tenant.ts';
import { execRoutes } from './routes/exec.ts';
import { fileRemoveRoutes } from './routes/file-remove.ts';
import { fileRoutes } from './routes/files.ts';
import { adminKeyRoutes, ownKeyRoutes } from './routes/keys.ts';
import { adminLimitRoutes, ownLimitRoutes } from './routes/limits.ts';
import { mcpRoutes } from './routes/mcp.ts';
import { mcpServerRoutes } from './routes/mcp-servers.ts';
import { nodeRoutes } from './routes/nodes.ts';
import { pauseRoutes } from './routes/pause.ts';
import { pluginRoutes } from './routes/plugins.ts';
import { requestRoutes } from './routes/requests.ts';
import { scheduleRoutes } from './routes/schedules.ts';
import { sessionRoutes } from './routes/session.ts';
import { settingsRoutes } from './routes/settings.ts';
import { skillRoutes } from './routes/skills.ts';
import { snapshotRoutes } from './routes/snapshots.ts';
import { teamRoutes } from './routes/teams.ts';
import { tenantAgentRoutes } from './routes/tenant-agents.ts';
import { tenantRoutes } from './routes/tenants.ts';
import { terminalControlRoutes } from './routes/terminal-control.ts';
import { terminalRoutes } from './routes/terminals.ts';
import { auditUploads } from './routes/upload-audit.ts';
import { usageRoutes } from './routes/usage.ts';
import { createUploadSlots } from './upload-slots.ts';

/** The tenant, agent, skill and egress routes under /v1, with their tenant admission. */
export function mountV1Routes(app: Hono<ApiEnv>, state: AppState): void {
  const { deps, limits, metrics, lifecycle, connections } = state;
  const forward = routeSlot(deps.replicas);
  app.route('/', tenantRoutes(deps.store.tenants, deps.adminKey, deps.tenantDeletion));
  app.route('/', tenantAgentRoutes(deps.store.tenants, deps.agents, deps.adminKey));

  // Terminal WebSockets authenticate themselves (browsers cannot send the header) and hold no
  // request slot while open; registered first, they answer before the header auth below.
  app.route(
    '/',
    terminalRoutes(deps.agents, deps.store.tenants, {
      maxSocketsPerTenant: limits.tenantTerminals,
      metrics,
      ...(connections === undefined ? {} : { connections }),
      ...(forward === undefined ? {} : { forward }),
      ...(deps.activity === undefined ? {} : { activity: deps.activity }),
    }),
  );
  // Past the terminal routes nothing upgrades: a stray upgrade's answer would never be read.
  app.use('/v1/agents/*', refuseStrayUpgrade);
  // DELETE takes no slot: it is how a tenant stops what holds its slots (long calls, streams);
  // except the DELETEs that work in the sandbox and stop nothing (a file tree removed, a terminal
  // closed): those are bounded like any other request. Nor does an MCP client's notification
  // stream take one, open for as long as it is connected (own cap).
  // Archive uploads spooled at once, per tenant and in all (./upload-slots.ts).
  const uploadSlots = createUploadSlots({
    perTenant: limits.tenantArchiveUploads,
    total: limits.archiveUploads,
  });
  const concurrency = tenantConcurrency(createTenantLimiter(limits.tenantConcurrency, deps.limitShare));
  const tenantScoped = (path: string): void => useTenantScope(app, state, concurrency, path);
  // `/v1/agents/*` matches `/v1/agents` itself too: one registration, so one slot per request.
  tenantScoped('/v1/agents/*');
  app.use('/v1/agents', agentQuota(deps.store.tenants, deps.agents, limits.workspaceMb));
  // After the quota's turn: a create it admitted is checked against its tenant's state once made.
  const lateWrites = refuseLateWrites(deps.store.tenants, deps.tenantDeletion);
  app.use('/v1/agents', lateWrites);
  app.route('/', agentRoutes(deps.agents));
  app.route('/', pauseRoutes(deps.agents));
  app.route('/', checkpointRoutes(deps.agents));
  tenantScoped('/v1/snapshots/*');
  app.route('/', snapshotRoutes(deps.agents, deps.store.tenants));
  app.route(
    '/',
    callRoutes(
      deps.agents,
      limits.callTimeoutMs,
      deps.store.callBatches && {
        batches: deps.store.callBatches,
        events: deps.store.events,
        ...(deps.replicas?.holder === undefined
          ? {}
          : { bootId: deps.replicas.holder.id, holderAlive: deps.replicas.holder.alive }),
      },
    ),
  );
  app.route('/', eventRoutes(deps.agents, deps.store.events, lifecycle, limits.eventPageBytes));
  // What the client does to a sandbox beside the tools (uploads, a command, a delete, a terminal) is
  // in the agent's log (./audit.ts).
  const audit = createClientAudit(deps.store.events);
  app.use('/v1/agents/:id/files', auditUploads(deps.agents, audit, 'file_write'));
  app.use('/v1/agents/:id/archive', auditUploads(deps.agents, audit, 'archive_upload'));
  app.route('/', fileRoutes(deps.agents, limits.maxUploadBytes, uploadSlots));
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
    app.use('/v1/skills/*', lateWrites);
    app.route('/', skillRoutes(deps.skills));
  }
  if (deps.egress !== undefined) {
    tenantScoped('/v1/egress');
    app.use('/v1/egress', lateWrites);
    app.route('/', egressRoutes(deps.egress));
  }
  tenantScoped('/v1/settings');
  app.use('/v1/settings', lateWrites);
  app.route('/', settingsRoutes(deps.agents));
  app.route('/', adminKeyRoutes(deps.store.tenants, deps.adminKey));
  tenantScoped('/v1/keys/*');
  app.route('/', ownKeyRoutes(deps.store.tenants));
  app.route('/', adminLimitRoutes(deps.store.tenants, deps.adminKey));
  tenantScoped('/v1/limits');
  app.route('/', ownLimitRoutes(deps.store.tenants, deps.agents, limits.workspaceMb, deps.store.events));
  app.route('/', nodeRoutes(deps.nodes, deps.adminKey));
  tenantScoped('/v1/events/*');
  app.route(
    '/',
    tenantExportRoutes({
      agents: deps.agents,
      events: deps.store.events,
      lifecycle,
      pageBytes: limits.eventPageBytes,
    }),
  );
}

/** GET /openapi.json: the description of `app`, generated on first request and kept. */
export function mountOpenApi(app: Hono<ApiEnv>, state: AppState): void {
  const { deps } = state;
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
}
