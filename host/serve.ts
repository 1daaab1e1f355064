// `serve`: opens the store, makes the default tenant on first start, ends the calls a crash left
// running (INTERRUPTED, tools/interrupted.ts), re-adopts the agents'
// containers, starts the isolate workers and runs the HTTP API on loopback until SIGINT/SIGTERM.
// Shutdown order: stop accepting, refuse new requests (503), end SSE streams with a final
// `shutdown` event, let in-flight batches finish for the grace period and fail the rest with
// SHUTTING_DOWN, detach from containers (they stay running for re-adoption), stop the isolate
// workers, flush and close the store.// startServer wires the parts, each in its own module: serve-sandboxes.ts (the image, workspaces,
// docker provider and egress), serve-agents.ts (the isolate host and the agent service),
// serve-http.ts (the app and the HTTP server); the shutdown order lives here, in close().

import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { flushCompileCache } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createConnectionGuard } from './api/connections.ts';
import { createFairScheduler } from './api/fair.ts';
import { createLifecycle } from './api/lifecycle.ts';
import { startLoopMonitor } from './api/loop-monitor.ts';
import { createMetrics } from './api/metrics.ts';
import { createWebSocketServer } from './api/routes/terminals.ts';
import type { Config } from './config.ts';
import type { SandboxEgress } from './egress/proxy/index.ts';
import type { IsolateHost } from './isolates/index.ts';
import { replicaUrlOf } from './replica.ts';
import type { DockerProvider, DockerProviderOptions } from './sandbox/docker/index.ts';
import type { SandboxProvider } from './sandbox/types.ts';
import { startAgents, startIsolates } from './serve-agents.ts';
import { createServerApp, listenHttp } from './serve-http.ts';
import { ownershipOf, replicaDeps, replicaIdentity, wireOwnership } from './serve-replicas.ts';
import {
  defaultProvider,
  nodeAdminOf,
  poolOwnersOf,
  sandboxImageOf,
  startEgress,
} from './serve-sandboxes.ts';
import { connectStore, storeSecretsKey } from './store/connect.ts';
import type { Store } from './store/index.ts';
import { isPostgresUrl } from './store/pg/url.ts';
import { createTenantDeletion } from './tenants/deletion.ts';
import { createLogRetention, type LogRetentionOptions } from './tenants/retention.ts';
import { repairInterruptedCalls, repairLine } from './tools/interrupted.ts';

export const VERSION = '0.1.0';
export const DEFAULT_KEY_FILE = 'default-tenant.key';
/** How often the service looks for tenants whose deletion it should run (one asked through the CLI). */
export const DELETION_POLL_MS = 10_000;

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
  /**
   * Without `sandboxes`: options of the default docker provider over those the configuration
   * gives (tests: a fixture's names, labels and workspaces). Default none.
   */
  docker?: Partial<DockerProviderOptions>;
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

const ensureDefaultTenant = async (
  store: Store,
  config: Config,
  log: (line: string) => void,
): Promise<void> => {
  const keyFile = join(config.dataDir, DEFAULT_KEY_FILE);
  if ((await store.tenants.listTenants()).length === 0) {
    const tenant = await store.tenants.createTenant('default');
    writeFileSync(keyFile, `${tenant.apiKey}\n`, { mode: 0o600 });
    chmodSync(keyFile, 0o600);
    log(
      `created the default tenant ${tenant.id}; its API key (shown once, kept in ${keyFile}):\n  ${tenant.apiKey}`,
    );
  } else if (existsSync(keyFile)) {
    log(`default tenant key: ${keyFile}`);
  }
};

/**
 * Where the store's background failures go (an event write to be retried, a pooled connection
 * lost, a request timer's read): the log, at most one line per STORE_TROUBLE_MS, with how many
 * came meanwhile, so an outage of the database is visible without flooding the log.
 */
const STORE_TROUBLE_MS = 5000;
const storeTrouble = (log: (line: string) => void): ((error: unknown) => void) => {
  let last = 0;
  let quiet = 0;
  return (error) => {
    const now = Date.now();
    if (now - last < STORE_TROUBLE_MS) {
      quiet++;
      return;
    }
    const more = quiet === 0 ? '' : ` (and ${quiet} more since the last line)`;
    log(`store: ${error instanceof Error ? error.message : String(error)}${more}`);
    last = now;
    quiet = 0;
  };
};

/**
 * The store the service runs on (DSH_DB, or the one given), its secrets key (resolved first: the
 * replicas' forward signature derives from it), this process's replica identity, and, on a store
 * that keeps replicas, the ownership of agent families (serve-replicas.ts).
 */
const openServiceStore = async (config: Config, given: Store | undefined, log: (line: string) => void) => {
  const identity = replicaIdentity(config, given === undefined && isPostgresUrl(config.database));
  const trouble = storeTrouble(log);
  if (given !== undefined) return { identity, secretsKey: undefined, ownership: undefined, store: given };
  const secretsKey = storeSecretsKey({
    database: config.database,
    dataDir: config.dataDir,
    secretsKey: config.secretsKey,
    log,
  });
  const opened = await connectStore({
    database: config.database,
    dataDir: config.dataDir,
    poolSize: config.databasePool,
    logBudgetBytes: config.tenantLogBytes,
    ...(secretsKey === undefined ? {} : { secretsKey }),
    log,
    onError: trouble,
    fence: identity.fence,
  });
  // On PostgreSQL this process is one replica of many: agent families are owned.
  return { identity, secretsKey, ...ownershipOf(opened, identity, config.replicaLeaseMs, trouble) };
};

/** The durable log's retention: a background pass in bounded slices (tenants/retention.ts). */
const logRetentionOf = (
  config: Config,
  store: Store,
  settings: LogRetentionOptions['settings'],
  log: (line: string) => void,
) =>
  createLogRetention({
    store: store.logRetention,
    settings,
    events: store.events,
    maxDays: config.logRetentionMaxDays,
    onError: (id, e) =>
      log(
        `log retention${id === '' ? '' : ` of tenant ${id}`}: ${e instanceof Error ? e.message : String(e)}`,
      ),
  });

/** Calls a crash left running end INTERRUPTED before anything runs or is served (tools/interrupted.ts). */
async function repairAtStart(store: Store, log: (line: string) => void): Promise<void> {
  const repaired = repairLine(await repairInterruptedCalls(store.events, { requests: store.requests }));
  if (repaired !== undefined) log(repaired);
}

export const startServer = async (config: Config, options: StartOptions = {}): Promise<Running> => {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  if (!options.sandboxes) sandboxImageOf(config); // refused before anything is made
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const { identity, secretsKey, ownership, store } = await openServiceStore(config, options.store, log);
  await ensureDefaultTenant(store, config, log);
  // With replicas, only the families a replica takes over, when it takes them (serve-replicas.ts).
  if (ownership === undefined) await repairAtStart(store, log);
  const { egress, sandboxEgress } = startEgress(config, store, log);
  const docker =
    options.sandboxes === undefined
      ? await defaultProvider(config, store, log, sandboxEgress.attach, {
          // Replicas share the instance: each one's warm pool is its own while it runs.
          pools: ownership && poolOwnersOf(store, identity.holder, config.replicaLeaseMs),
          ...(options.docker === undefined ? {} : { overrides: options.docker }),
        })
      : undefined;
  const sandboxes =
    typeof options.sandboxes === 'function'
      ? options.sandboxes(sandboxEgress.attach)
      : (options.sandboxes ?? (docker as DockerProvider));
  const metrics = createMetrics({ version: VERSION });
  const { isolates, idlePoll } = await startIsolates(config, metrics, options.isolates);
  const loop = startLoopMonitor({ metrics, log });
  const fair = createFairScheduler({ budgetMs: config.fairTurnMs });
  const lifecycle = createLifecycle();
  const { agents, scheduler, skills, quotas } = startAgents(
    config,
    { egress, store, sandboxes, isolates, metrics, fair, ownership },
    log,
  );
  if (ownership !== undefined) wireOwnership(ownership, { agents, store }, log);
  // Tenants being deleted go on in the background; one a crash left half done is resumed below.
  const tenantDeletion = createTenantDeletion({
    tenants: store.tenants,
    purge: store.tenantPurge,
    events: store.events,
    agents: store.agents,
    service: agents,
    onError: (id, e) =>
      log(`tenant ${id}: deletion failed, retried in 5 s: ${e instanceof Error ? e.message : String(e)}`),
  });
  const retention = logRetentionOf(config, store, agents.settings, log);
  // Connections without a valid key cannot take the last ones, nor stay silent (api/connections.ts).
  const connections = createConnectionGuard({
    maxConnections: config.maxConnections,
    reserve: config.connectionReserve,
    firstByteMs: config.firstByteTimeoutMs,
    perTenant: config.tenantConnections,
  });
  const nodes = await nodeAdminOf(config, docker);
  const app = createServerApp(config, {
    version: VERSION,
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
    tenantDeletion,
    sandboxes,
    idlePoll,
    ...(nodes === undefined ? {} : { nodes }),
    ...(ownership === undefined || secretsKey === undefined
      ? {}
      : {
          replicas: replicaDeps(ownership, identity, store, {
            secretsKey,
            proxies: config.trustedProxies,
            leaseMs: config.replicaLeaseMs,
          }),
        }),
  });
  // Terminal WebSockets (/v1/agents/:id/terminals/:tid) upgrade through this ws server.
  const wss = createWebSocketServer();
  const server = await listenHttp(config, app.fetch, wss, connections, idlePoll);
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  await ownership?.start(replicaUrlOf(config, port));
  const resumed = await tenantDeletion.watch(DELETION_POLL_MS);
  if (resumed > 0) log(`resuming the deletion of ${resumed} tenant(s)`);
  retention.start(config.logRetentionEverySeconds * 1000);

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      lifecycle.begin();
      scheduler?.close(); // schedules stay stored; the next start fires what fell due meanwhile
      for (const ws of wss.clients) ws.close(1001, 'server shutting down');
      const idle = setInterval(() => server.closeIdleConnections(), 50);
      await tenantDeletion.close(); // after its current step; the rest at the next start
      await retention.close(); // after its current slice
      quotas.close(); // the tenants' quotas the plugins' caps read
      await agents.close(config.shutdownGraceMs);
      const hard = setTimeout(() => server.closeAllConnections(), 5000);
      await closed;
      clearInterval(idle);
      clearTimeout(hard);
      // The families go to the other replicas at once (they need not wait for the leases to expire).
      await ownership?.close().catch((e: unknown) => log(`replica: ${String(e)}`));
      await isolates.close();
      sandboxEgress.close();
      await egress.close();
      loop.stop();
      idlePoll.close();
      if (options.store === undefined) await store.close();
    })();
    return closing;
  };
  return { url: `http://${host}:${port}`, port, store, close };
};

export const serve = async (config: Config): Promise<void> => {
  const running = await startServer(config);
  process.stdout.write(`dsh-sandbox listening on ${running.url}\n`);
  flushCompileCache(); // what this start compiled, for the next one (a no-op unless cli.ts enabled it)
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
