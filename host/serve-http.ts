// The HTTP side of `serve` (./serve.ts): the control plane app (./api/app.ts) with the configured
// limits, admission and /metrics sources, and the HTTP server that runs it with the terminal
// WebSocket server. Invariants: the connection guard is attached before the first connection (it
// owns the connection cap); slow clients cannot hold a socket past headersTimeout or 60 s a request.

import { statfsSync } from 'node:fs';
import type { Server } from 'node:http';
import { serve as listen } from '@hono/node-server';
import type { Hono } from 'hono';
import type { Assembled } from './agents/assemble.ts';
import { offeredBy } from './agents/sandbox-runtime.ts';
import type { AgentService } from './agents/service.ts';
import { createApp } from './api/app.ts';
import { createAuthThrottle } from './api/auth-throttle.ts';
import type { ConnectionGuard } from './api/connections.ts';
import type { ApiEnv } from './api/env.ts';
import type { FairScheduler } from './api/fair.ts';
import type { ReplicaDeps } from './api/forward/route.ts';
import { upgradeTunnels } from './api/forward/upgrade.ts';
import type { Lifecycle } from './api/lifecycle.ts';
import type { Metrics } from './api/metrics.ts';
import type { NodeAdmin } from './api/routes/nodes.ts';
import type { createWebSocketServer } from './api/routes/terminals.ts';
import type { Config } from './config.ts';
import type { Egress } from './egress/index.ts';
import { type IdlePoll, whilePolling } from './idle-poll.ts';
import type { IsolateHost } from './isolates/index.ts';
import type { DockerProvider } from './sandbox/docker/index.ts';
import type { SandboxProvider } from './sandbox/types.ts';
import type { Store } from './store/index.ts';
import { replicaShareOf } from './store/replica-share.ts';
import type { TenantDeletion } from './tenants/deletion.ts';
import { trustedProxies } from './trusted-proxies.ts';

/** The workspaces' file system, one statfs per scrape (a per-workspace figure would be one per agent). */
const diskOf = (dir: string): { used: number; free: number } => {
  const fs = statfsSync(dir);
  return { used: (fs.blocks - fs.bfree) * fs.bsize, free: fs.bavail * fs.bsize };
};

export interface ServerAppParts {
  version: string;
  store: Store;
  agents: AgentService;
  scheduler: Assembled['scheduler'];
  skills: Assembled['skills'];
  egress: Egress;
  isolates: IsolateHost;
  docker: DockerProvider | undefined;
  metrics: Metrics;
  lifecycle: Lifecycle;
  connections: ConnectionGuard;
  fair: FairScheduler;
  /** Replicas: forwarded requests checked, other replicas' agents forwarded (api/forward/route.ts). */
  replicas?: ReplicaDeps;
  /** DELETE /v1/tenants/:id (tenants/deletion.ts). */
  tenantDeletion?: TenantDeletion;
  /** The sandbox provider in use: /v1/health reports the runtimes it offers. */
  sandboxes?: SandboxProvider;
  /** The nodes of DSH_NODES (GET /v1/nodes, cordons). */
  nodes?: NodeAdmin;
  /** Touched by output flowing to clients (SSE events, terminal output) and terminal keystrokes. */
  idlePoll?: IdlePoll;
}

const shareOf = (store: Store, config: Config) => {
  const limitShare = replicaShareOf(store, config.replicaLeaseMs);
  return limitShare === undefined ? {} : { limitShare };
};

/** The control plane app over the parts, with the configured keys, throttle, proxies and limits. */
export function createServerApp(config: Config, parts: ServerAppParts): Hono<ApiEnv> {
  const {
    store,
    agents,
    scheduler,
    skills,
    egress,
    isolates,
    docker,
    metrics,
    lifecycle,
    connections,
    fair,
    replicas,
  } = parts;
  return createApp({
    startedAt: Date.now(),
    version: parts.version,
    store,
    agents,
    metrics,
    lifecycle,
    connections,
    fair,
    ...(scheduler === undefined ? {} : { schedules: scheduler }),
    ...(replicas === undefined ? {} : { replicas }),
    // On PostgreSQL a tenant's request concurrency is shared over the live replicas.
    ...shareOf(store, config),
    ...(skills === undefined ? {} : { skills }),
    egress: egress.settings,
    isolateWorkers: () => isolates.workerPids().length,
    ...(docker === undefined
      ? {}
      : {
          pool: () => ({ size: config.poolSize, available: docker.pool.ready }),
          workspaceDisk: () => diskOf(config.workspacesDir),
        }),
    mcpOrigins: config.mcpOrigins,
    ...(parts.tenantDeletion === undefined ? {} : { tenantDeletion: parts.tenantDeletion }),
    ...(parts.nodes === undefined ? {} : { nodes: parts.nodes }),
    ...(parts.idlePoll === undefined ? {} : { activity: touchOf(parts.idlePoll) }),
    ...(parts.sandboxes?.runtimes === undefined
      ? {}
      : { runtimes: () => offeredBy(parts.sandboxes as SandboxProvider) }),
    ...(config.adminKey === undefined ? {} : { adminKey: config.adminKey }),
    ...(config.metricsKey === undefined ? {} : { metricsKey: config.metricsKey }),
    authThrottle: createAuthThrottle({
      maxFailures: config.authFailures,
      windowMs: config.authFailureWindowMs,
    }),
    ...(config.trustedProxies.length === 0 ? {} : { trustedProxies: trustedProxies(config.trustedProxies) }),
    limits: {
      tenantConcurrency: config.tenantConcurrency,
      maxUploadBytes: config.maxUploadBytes,
      tenantArchiveUploads: config.tenantArchiveUploads,
      archiveUploads: config.archiveUploads,
      callTimeoutMs: config.callTimeoutMs,
      tenantTerminals: config.tenantTerminals,
      eventPageBytes: config.eventPageBytes,
      workspaceMb: config.workspaceMb,
    },
  });
}

const touchOf = (poll: IdlePoll) => () => poll.touch();

/**
 * Listens on config.host:port with `fetch`, terminal upgrades through `wss`, and `connections`
 * attached. Requests arriving and answered keep idle CPUs polling (`idlePoll`, ./idle-poll.ts;
 * the app touches it for what flows on open streams: createServerApp's `idlePoll`).
 */
export function listenHttp(
  config: Config,
  fetch: Hono<ApiEnv>['fetch'],
  wss: ReturnType<typeof createWebSocketServer>,
  connections: ConnectionGuard,
  idlePoll?: IdlePoll,
): Promise<Server> {
  // A terminal upgrade for another replica's agent is tunnelled there (api/forward/upgrade.ts).
  const upgrades = upgradeTunnels(idlePoll === undefined ? fetch : whilePolling(idlePoll, fetch));
  return new Promise<Server>((resolve) => {
    const s = listen(
      {
        fetch: upgrades.fetch,
        hostname: config.host,
        port: config.port,
        websocket: { server: wss },
        serverOptions: {
          // Slow clients cannot hold a socket forever while sending a request: a head must be
          // complete within headersTimeout (else 408), a whole request within 60 s; both are
          // checked this often (Node's default is every 30 s).
          connectionsCheckingInterval: Math.max(
            100,
            Math.min(5_000, Math.floor(config.headersTimeoutMs / 4)),
          ),
          headersTimeout: config.headersTimeoutMs,
          requestTimeout: Math.max(60_000, config.headersTimeoutMs),
          keepAliveTimeout: config.keepAliveTimeoutMs,
        },
      },
      () => resolve(s as Server),
    ) as Server;
    upgrades.attach(s);
    // Before the first connection: the guard owns the connection cap (it makes room by closing
    // unauthenticated connections, which Node's own maxConnections could not).
    connections.attach(s);
  });
}
