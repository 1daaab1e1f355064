// `serve`: opens the store, makes the default tenant on first start, re-adopts the agents'
// containers, starts the isolate workers and runs the HTTP API on loopback until SIGINT/SIGTERM.
// Shutdown order: stop accepting, refuse new requests (503), end SSE streams with a final
// `shutdown` event, let in-flight batches finish for the grace period and fail the rest with
// SHUTTING_DOWN, detach from containers (they stay running for re-adoption), stop the isolate
// workers, flush and close the store.

import { chmodSync, existsSync, mkdirSync, readFileSync, statfsSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { serve as listen } from '@hono/node-server';
import { assembleAgents } from './agents/assemble.ts';
import { agentEgressRules } from './agents/web.ts';
import { createApp } from './api/app.ts';
import { createAuthThrottle } from './api/auth-throttle.ts';
import { trustedProxies } from './api/client-address.ts';
import { createConnectionGuard } from './api/connections.ts';
import { createFairScheduler, takingTurns, yieldingWorkers } from './api/fair.ts';
import { createLifecycle } from './api/lifecycle.ts';
import { startLoopMonitor } from './api/loop-monitor.ts';
import { createMetrics, type Metrics, observeCalls } from './api/metrics.ts';
import { createWebSocketServer } from './api/routes/terminals.ts';
import type { Config } from './config.ts';
import { createEgress } from './egress/index.ts';
import { createAuthorities } from './egress/intercept/authority.ts';
import { createSandboxEgress, type SandboxEgress } from './egress/proxy/index.ts';
import { SandboxError } from './errors.ts';
import type { IsolateHost, IsolateHostEvent } from './isolates/index.ts';
import type { DockerProvider } from './sandbox/docker/index.ts';
import type { SandboxProvider } from './sandbox/types.ts';
import { openStore, type Store } from './store/index.ts';

export const VERSION = '0.1.0';
export const DEFAULT_KEY_FILE = 'default-tenant.key';

export interface StartOptions {
  /**
   * Default: the docker provider on the local engine with config.sandboxImage. A function gets the
   * hook that serves each sandbox's egress proxy (a docker provider's `egress` option).
   */
  sandboxes?: SandboxProvider | ((egress: SandboxEgress['attach']) => SandboxProvider);
  /** Default: createIsolateHost({ workers: config.isolateWorkers, workerRssMb: config.isolateWorkerMb }). */
  isolates?: IsolateHost;
  /** Default: a libsql file in config.dataDir. */
  store?: Store;
  /** Where start-up messages go. Default stdout. */
  log?: (line: string) => void;
}

export interface Running {
  url: string;
  port: number;
  store: Store;
  /** Graceful shutdown; idempotent. */
  close(): Promise<void>;
}

const ensureDefaultTenant = (store: Store, config: Config, log: (line: string) => void): void => {
  const keyFile = join(config.dataDir, DEFAULT_KEY_FILE);
  if (store.tenants.listTenants().length === 0) {
    const tenant = store.tenants.createTenant('default');
    writeFileSync(keyFile, `${tenant.apiKey}\n`, { mode: 0o600 });
    chmodSync(keyFile, 0o600);
    log(
      `created the default tenant ${tenant.id}; its API key (shown once, kept in ${keyFile}):\n  ${tenant.apiKey}`,
    );
  } else if (existsSync(keyFile)) {
    log(`default tenant key: ${keyFile}`);
  }
};

/** The sandbox image tag; the image is built by scripts/ (`npm start`), never from here. */
const sandboxImageOf = (config: Config): string => {
  if (config.sandboxImage !== undefined) return config.sandboxImage;
  throw new SandboxError(
    'CONFIG_INVALID',
    'No sandbox image: start the service with `npm start` (it builds the image for this checkout), or set DSH_SANDBOX_IMAGE to a tag that `npm run setup` printed.',
  );
};

/**
 * Loop workspaces (a size-limited file system each); undefined when the operator turned the quota
 * off, which leaves the provider its default, plain Docker volumes.
 */
const workspaceStore = async (config: Config, log: (line: string) => void) => {
  if (!config.diskQuota) {
    log('workspaces: Docker volumes WITHOUT a disk limit (DSH_DISK_QUOTA=off)');
    return undefined;
  }
  const { createLoopWorkspaces, loopUnavailable } = await import('./sandbox/docker/index.ts');
  const why = await loopUnavailable({ dockerHost: config.dockerHost });
  if (why !== undefined) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `Workspaces cannot get a disk limit here: ${why}. Fix that, or set DSH_DISK_QUOTA=off to run without one (any agent can then fill the host's disk).`,
    );
  }
  log(`workspaces: one ${config.workspaceMb} MiB file system each (default) in ${config.workspacesDir}`);
  return createLoopWorkspaces(config.workspacesDir, {
    overcommit: config.diskOvercommit,
    reserveBytes: config.diskReserveMb * 1024 * 1024,
  });
};

/**
 * The docker provider on the local engine, acting for this store's instance: it adopts only its own
 * containers (and those of older versions that this store's agents name as their sandbox), so
 * several instances with their own data directories can share one engine.
 */
const defaultProvider = async (
  config: Config,
  store: Store,
  log: (line: string) => void,
  egress: SandboxEgress['attach'],
): Promise<DockerProvider> => {
  const { createDockerProvider } = await import('./sandbox/docker/index.ts');
  const provider = createDockerProvider({
    image: sandboxImageOf(config),
    instance: store.instanceId,
    pool: { size: config.poolSize },
    workspaceSpares: config.workspaceSpares,
    onError: (e) => log(`sandbox: ${String(e)}`),
    defaults: { diskBytes: config.workspaceMb * 1024 * 1024 },
    workspaces: await workspaceStore(config, log),
    spoolDir: config.spoolDir,
    egress,
    ...(linksOf(config, log) === undefined ? {} : { links: config.linksDir }),
  });
  const recorded = store.agents
    .listAll({ includeDeleted: true })
    .flatMap((a) => (a.sandboxId === undefined ? [] : [[a.sandboxId, a.id] as const]));
  const adopted = await provider
    .adopt({ claim: recorded.map(([id]) => id), assigned: new Map(recorded) })
    .catch((e: unknown) => {
      log(`could not list existing sandboxes: ${String(e)}`);
      return [];
    });
  log(`instance ${store.instanceId}: re-adopted ${adopted.length} agent sandbox(es)`);
  return provider;
};

/** The links folder, when sessions may use links: on, and an engine on this machine. */
const linksOf = (config: Config, log: (line: string) => void): string | undefined => {
  if (!config.sandboxLinks) return undefined;
  const host = config.dockerHost;
  if (host && !host.startsWith('unix://')) {
    log(
      `sandboxes: the attach stream only (the engine at DOCKER_HOST=${host} cannot see this machine's folders)`,
    );
    return undefined;
  }
  return config.linksDir;
};

/** Node's CAs plus the operator's file (DSH_EGRESS_CA_FILE): what HTTPS upstreams are verified against. */
const upstreamCas = (file: string): string => {
  try {
    return `${rootCertificates.join('\n')}\n${readFileSync(file, 'utf8')}`;
  } catch (e) {
    throw new SandboxError(
      'CONFIG_INVALID',
      `DSH_EGRESS_CA_FILE ${file} cannot be read: ${(e as Error).message}`,
    );
  }
};

/** Counts a worker that starts again (a restart), by how its previous process ended. */
const countRestarts = (metrics: Metrics) => {
  const seen = new Set<number>();
  const ended = new Map<number, string>();
  return (event: IsolateHostEvent): void => {
    if (event.type === 'worker_killed') ended.set(event.worker, 'killed');
    else if (event.type === 'worker_exited') {
      if (!ended.has(event.worker)) ended.set(event.worker, 'exited');
    } else if (seen.has(event.worker)) {
      metrics.workerRestart(ended.get(event.worker) ?? 'exited');
      ended.delete(event.worker);
    } else seen.add(event.worker);
  };
};

const both =
  <E>(a: (event: E) => void, b: (event: E) => void) =>
  (event: E): void => {
    a(event);
    b(event);
  };

/** The workspaces' file system, one statfs per scrape (a per-workspace figure would be one per agent). */
const diskOf = (dir: string): { used: number; free: number } => {
  const fs = statfsSync(dir);
  return { used: (fs.blocks - fs.bfree) * fs.bsize, free: fs.bavail * fs.bsize };
};

export const startServer = async (config: Config, options: StartOptions = {}): Promise<Running> => {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  if (!options.sandboxes) sandboxImageOf(config); // refused before anything is made
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const store =
    options.store ??
    openStore({
      path: config.database,
      logBudgetBytes: config.tenantLogBytes,
      ...(config.secretsKey === undefined ? {} : { secretsKey: config.secretsKey }),
    });
  ensureDefaultTenant(store, config, log);
  const egress = createEgress({
    store: store.egress,
    events: store.events,
    agentRulesOf: agentEgressRules(store.agents),
    maxBudget: { connections: config.egressConnections, bytesPerHour: config.egressBytesPerHour },
    testHosts: config.egressTestHosts,
    ...(config.egressCaFile === undefined ? {} : { ca: upstreamCas(config.egressCaFile) }),
    ...(config.searxngUrl === undefined ? {} : { searxngUrl: config.searxngUrl }),
    web: { maxBytes: config.webFetchMaxBytes, timeoutMs: config.webFetchTimeoutMs },
  });
  if (config.egressTestHosts.length > 0)
    log(
      `egress: TEST HOSTS admitted despite their addresses (DSH_EGRESS_ALLOW_HOSTS_FOR_TESTS): ${config.egressTestHosts.map((h) => (h.port === undefined ? h.ip : `${h.ip}:${h.port}`)).join(', ')}`,
    );
  // Sandbox egress (sandboxd's proxy) is the docker provider's; attributed to the sandbox's agent.
  const sandboxEgress = createSandboxEgress({
    gateway: egress.gateway,
    callerOf: (agentId) => {
      const agent = store.agents.byId(agentId);
      return agent && { tenantId: agent.tenantId, agentId, sessionId: agentId, via: 'proxy' };
    },
    maxTunnels: config.egressSandboxTunnels,
    headersTimeoutMs: config.headersTimeoutMs,
    intercept: createAuthorities({ store: store.egress }),
    onError: (e) => log(`egress proxy: ${String(e)}`),
  });
  const docker =
    options.sandboxes === undefined
      ? await defaultProvider(config, store, log, sandboxEgress.attach)
      : undefined;
  const sandboxes =
    typeof options.sandboxes === 'function'
      ? options.sandboxes(sandboxEgress.attach)
      : (options.sandboxes ?? (docker as DockerProvider));
  const metrics = createMetrics({ version: VERSION });
  const isolates =
    options.isolates ??
    (await import('./isolates/index.ts')).createIsolateHost({
      workers: config.isolateWorkers,
      workerRssMb: config.isolateWorkerMb,
      onEvent: both(countRestarts(metrics), yieldingWorkers(config.isolateNice)),
    });
  const loop = startLoopMonitor({ metrics, log });
  const fair = createFairScheduler({ budgetMs: config.fairTurnMs });
  const lifecycle = createLifecycle();
  const { agents, scheduler, skills } = assembleAgents({
    egress,
    store,
    sandboxes,
    isolates: takingTurns(isolates, fair),
    observe: observeCalls(metrics),
    schedules: { maxPerAgent: config.schedulesPerAgent, minPeriodMs: config.scheduleMinSeconds * 1000 },
    teams: {
      limits: {
        maxTasks: config.teamBoardTasks,
        maxDescriptionChars: config.teamTaskChars,
        maxScopesPerTask: config.teamTaskScopes,
      },
    },
    skills: {
      maxPerTenant: config.skillsPerTenant,
      maxBytes: config.skillMaxBytes,
      spoolDir: config.spoolDir,
    },
    children: {
      limits: {
        childrenPerAgent: config.childrenPerAgent,
        maxDepth: config.childDepth,
        concurrentChildren: config.concurrentChildren,
        mailboxSize: config.mailboxSize,
        messageBytes: config.messageBytes,
        // A wait never outlives the batch that waits.
        waitMaxMs: Math.min(600_000, config.callTimeoutMs),
      },
      providers: config.subagentProviders,
    },
    // Each tenant's plugins on worker processes of its own, within its caps and the host's.
    plugins: {
      processOptions: {
        maxWorkers: config.pluginWorkers,
        rssMb: config.pluginWorkerMb,
        idleMs: config.pluginIdleMs,
      },
      limits: {
        maxWorkersPerTenant: config.pluginTenantWorkers,
        maxRunningPerAgent: config.pluginsPerAgent,
        maxRunningPerTenant: config.pluginsPerTenant,
        maxMemoryMbPerAgent: config.pluginAgentMb,
        maxMemoryMbPerTenant: config.pluginTenantMb,
      },
    },
    codeMode: {
      defaults: { cpuMs: config.codeCpuMs, wallMs: Math.min(config.codeWallMs, config.callTimeoutMs) },
      // A program never outlives its batch: no wall clock past the batch deadline is promised.
      maxima: { cpuMs: config.codeCpuMaxMs, wallMs: Math.min(config.codeWallMaxMs, config.callTimeoutMs) },
    },
  });
  // Agents deleted while their sandbox could not be removed (a crash, an engine error) lose it now.
  void agents
    .reapDeleted((id, e) => log(`could not remove the sandbox of deleted agent ${id}: ${String(e)}`))
    .then((n) => n > 0 && log(`removed the sandboxes of ${n} deleted agent(s)`));
  // Plugins that were running when the service stopped run again (their tools come back with them).
  void agents
    .resumePlugins((id, e) => log(`could not start plugin ${id} again: ${String(e)}`))
    .then((n) => n > 0 && log(`started ${n} plugin(s) again`));
  // Connections without a valid key cannot take the last ones, nor stay silent (api/connections.ts).
  const connections = createConnectionGuard({
    maxConnections: config.maxConnections,
    reserve: config.connectionReserve,
    firstByteMs: config.firstByteTimeoutMs,
    perTenant: config.tenantConnections,
  });
  const app = createApp({
    startedAt: Date.now(),
    version: VERSION,
    store,
    agents,
    metrics,
    lifecycle,
    connections,
    fair,
    ...(scheduler === undefined ? {} : { schedules: scheduler }),
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
      callTimeoutMs: config.callTimeoutMs,
      tenantTerminals: config.tenantTerminals,
      eventPageBytes: config.eventPageBytes,
    },
  });
  // Terminal WebSockets (/v1/agents/:id/terminals/:tid) upgrade through this ws server.
  const wss = createWebSocketServer();
  const server = await new Promise<Server>((resolve) => {
    const s = listen(
      {
        fetch: app.fetch,
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
    // Before the first connection: the guard owns the connection cap (it makes room by closing
    // unauthenticated connections, which Node's own maxConnections could not).
    connections.attach(s);
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      lifecycle.begin();
      scheduler?.close(); // schedules stay stored; the next start fires what fell due meanwhile
      for (const ws of wss.clients) ws.close(1001, 'server shutting down');
      const idle = setInterval(() => server.closeIdleConnections(), 50);
      await agents.close(config.shutdownGraceMs);
      const hard = setTimeout(() => server.closeAllConnections(), 5000);
      await closed;
      clearInterval(idle);
      clearTimeout(hard);
      await isolates.close();
      sandboxEgress.close();
      await egress.close();
      loop.stop();
      if (options.store === undefined) store.close();
    })();
    return closing;
  };
  return { url: `http://${host}:${port}`, port, store, close };
};

export const serve = async (config: Config): Promise<void> => {
  const running = await startServer(config);
  process.stdout.write(`dsh-sandbox listening on ${running.url}\n`);
  await new Promise<void>((resolve) => {
    let firstAt = 0;
    const stop = () => {
      // Ctrl-C reaches this process twice (from the terminal and forwarded by `npm start`'s
      // launcher): a repeat within 2 s is the same request; a later one forces an exit.
      if (firstAt === 0) {
        firstAt = Date.now();
        process.stdout.write('shutting down… (again to force)\n');
        resolve();
      } else if (Date.now() - firstAt > 2000) {
        process.stdout.write('forced exit; containers stay for re-adoption\n');
        process.exit(130);
      }
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await running.close();
};
