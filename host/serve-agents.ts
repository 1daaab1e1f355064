// The execution side of `serve` (./serve.ts): the isolate host (worker restarts counted, workers
// yielding the CPU, its runs keeping idle CPUs polling: ./idle-poll.ts) and the agent service
// assembled over it with the configured limits; at start, the sandboxes of deleted agents are reaped
// and the plugins that were running start again.
// Invariants: a program never outlives its batch (code-mode wall clocks and waits are capped by the
// batch deadline); isolate work takes fair turns with the API's heavy requests (./api/fair.ts).
import { join } from 'node:path';
import { type Assembled, assembleAgents } from './agents/assemble.ts';
import { gvisorAccess } from './agents/sandbox-runtime.ts';
import { type FairScheduler, takingTurns, yieldingWorkers } from './api/fair.ts';
import { type Metrics, observeCalls } from './api/metrics.ts';
import { childWorkspaceQuota } from './api/quotas.ts';
import type { Config } from './config.ts';
import type { Egress } from './egress/index.ts';
import { type IdlePoll, startIdlePoll, whilePolling } from './idle-poll.ts';
import type { IsolateHost, IsolateHostEvent, RunRequest } from './isolates/index.ts';
import type { Ownership } from './replicas/ownership.ts';
import type { SandboxProvider } from './sandbox/types.ts';
import type { ScheduleRecord, Store } from './store/index.ts';
import { replicaShareOf } from './store/replica-share.ts';
import { createTenantQuotaCache, pluginLimitsOf, type TenantQuotaCache } from './tenants/quota-cache.ts';

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

/**
 * The isolate host (`given`, or one of config's workers) whose runs and their tool calls, scheduled
 * workflows' too and not only requests', keep idle CPUs polling, with that poll (idle-poll.ts; serve
 * wraps its requests in it).
 */
export async function startIsolates(
  config: Config,
  metrics: Metrics,
  given?: IsolateHost,
): Promise<{ isolates: IsolateHost; idlePoll: IdlePoll }> {
  const host =
    given ??
    (await import('./isolates/index.ts')).createIsolateHost({
      workers: config.isolateWorkers,
      workerRssMb: config.isolateWorkerMb,
      onEvent: both(countRestarts(metrics), yieldingWorkers(config.isolateNice)),
    });
  const idlePoll = startIdlePoll(config, metrics);
  const isolates: IsolateHost = {
    run: whilePolling(idlePoll, (request: RunRequest) =>
      host.run({ ...request, onCall: whilePolling(idlePoll, request.onCall) }),
    ),
    get limits() {
      return host.limits;
    },
    workerPids: () => host.workerPids(),
    readyWorkers: () => host.readyWorkers(),
    close: () => host.close(),
  };
  return { isolates, idlePoll };
}

export interface ServerAgentParts {
  egress: Egress;
  store: Store;
  sandboxes: SandboxProvider;
  isolates: IsolateHost;
  metrics: Metrics;
  fair: FairScheduler;
  /** Replicas: which families this process runs (their schedules and plugins are its alone). */
  ownership?: Ownership | undefined;
}

/** Replicas: this replica's part of a tenant-wide plugin cap. */
const tenantShareOf = (store: Store, config: Config): { tenantShare?: (cap: number) => number } => {
  const share = replicaShareOf(store, config.replicaLeaseMs);
  return share === undefined ? {} : { tenantShare: share.of };
};

/**
 * The agent service, its scheduler and skills, with the configured limits, and the tenants' quotas
 * its plugin runtime reads (closed by the caller); starts the reaping and plugin resumption.
 */
export function startAgents(
  config: Config,
  parts: ServerAgentParts,
  log: (line: string) => void,
): Assembled & { quotas: TenantQuotaCache } {
  const { egress, store, sandboxes, isolates, metrics, fair, ownership } = parts;
  // The tenants' quotas at hand for the plugin runtime's synchronous start (tenants/quota-cache.ts).
  const quotas = createTenantQuotaCache(store.tenants, {
    onError: (e) => log(`could not read the tenants' quotas: ${String(e)}`),
  });
  const assembled = assembleAgents({
    egress,
    store,
    sandboxes,
    isolates: takingTurns(isolates, fair),
    observe: observeCalls(metrics),
    schedules: {
      maxPerAgent: config.schedulesPerAgent,
      maxPerTenant: config.tenantSchedules,
      minPeriodMs: config.scheduleMinSeconds * 1000,
      ...(ownership === undefined
        ? {}
        : { mayFire: (record: ScheduleRecord) => ownership.claim(record.tenantId, record.agentId) }),
    },
    teams: {
      limits: {
        maxTasks: config.teamBoardTasks,
        maxDescriptionChars: config.teamTaskChars,
        maxScopesPerTask: config.teamTaskScopes,
      },
    },
    checkpointDir: join(config.dataDir, 'checkpoints'),
    checkpointMaxBytes: config.checkpointMaxBytes,
    checkpointTenantMaxBytes: (tenantId) =>
      quotas.get(tenantId)?.checkpointBytes ?? config.tenantCheckpointMaxBytes,
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
      // With replicas, a family's pending child runs are resumed where it is taken over.
      resumeAtStart: ownership === undefined,
    },
    runtimes: gvisorAccess(config.gvisorTenants),
    // A child with a workspace of its own is held to its tenant's disk quota, as POST /v1/agents is.
    admitWorkspace: childWorkspaceQuota(store.tenants, () => assembled.agents, config.workspaceMb),
    // A freeze holds the agent's memory: past the operator's bound it is stopped (by its family's owner).
    freeze: {
      maxMs: config.freezeMaxSeconds * 1000,
      ...(ownership === undefined ? {} : { mayStop: (tenantId, id) => ownership.claim(tenantId, id) }),
      onError: (e) => log(`could not stop a frozen agent past DSH_FREEZE_MAX_SECONDS: ${String(e)}`),
    },
    // With replicas, a deleted top-level agent's family lets go of its lease (no renewal forever).
    ...(ownership === undefined ? {} : { onRemoved: (tenantId, id) => ownership.deleted(tenantId, id) }),
    // Each tenant's plugins on worker processes of its own, within its caps and the host's.
    plugins: {
      processOptions: {
        maxWorkers: config.pluginWorkers,
        rssMb: config.pluginWorkerMb,
        idleMs: config.pluginIdleMs,
        // On PostgreSQL a tenant's plugin caps are shared over the live replicas.
        ...tenantShareOf(store, config),
      },
      limits: {
        maxWorkersPerTenant: config.pluginTenantWorkers,
        maxRunningPerAgent: config.pluginsPerAgent,
        maxRunningPerTenant: config.pluginsPerTenant,
        maxMemoryMbPerAgent: config.pluginAgentMb,
        maxMemoryMbPerTenant: config.pluginTenantMb,
      },
      // The operator's `plugins` quota of a tenant in place of DSH_PLUGINS_PER_TENANT.
      limitsOf: pluginLimitsOf(quotas),
    },
    codeMode: {
      defaults: { cpuMs: config.codeCpuMs, wallMs: Math.min(config.codeWallMs, config.callTimeoutMs) },
      // A program never outlives its batch: no wall clock past the batch deadline is promised.
      maxima: { cpuMs: config.codeCpuMaxMs, wallMs: Math.min(config.codeWallMaxMs, config.callTimeoutMs) },
    },
  });
  const { agents } = assembled;
  // Agents deleted while their sandbox could not be removed (a crash, an engine error) lose it now.
  void agents
    .reapDeleted((id, e) => log(`could not remove the sandbox of deleted agent ${id}: ${String(e)}`))
    .then((n) => n > 0 && log(`removed the sandboxes of ${n} deleted agent(s)`))
    // The store's list can fail (on PostgreSQL: a server restarting); unheard, it would end the process.
    .catch((e: unknown) => log(`could not reap the sandboxes of deleted agents: ${String(e)}`));
  // Plugins that were running when the service stopped run again (their tools come back with them).
  // With replicas, each family's plugins run where the family does: taking it over resumes them.
  if (ownership !== undefined) return { ...assembled, quotas };
  // After the quotas' first load, so a resumed plugin counts against its tenant's own cap.
  void quotas.ready
    .then(() => agents.resumePlugins((id, e) => log(`could not start plugin ${id} again: ${String(e)}`)))
    .then((n) => n > 0 && log(`started ${n} plugin(s) again`))
    .catch((e: unknown) => log(`could not list the plugins to start again: ${String(e)}`));
  return { ...assembled, quotas };
}
