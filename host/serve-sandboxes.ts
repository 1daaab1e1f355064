// The sandboxes of `serve` (./serve.ts) and their egress: the sandbox image, the loop workspaces
// (or plain volumes when the disk quota is off), the docker provider that re-adopts this store's
// containers, and the egress (the gateway, web access, sandboxd's proxy) attributed to agents.
// Invariant: no image, no start (sandboxImageOf refuses before anything is made); a provider adopts
// only its own instance's containers, so several instances may share one engine; replicas share
// their store's instance, and a starting one removes only the pool containers of replicas that no
// longer run (their heartbeat older than a lease), never the live warm pools of the others.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { sweepNodeSnapshots, sweepOrphanSnapshots } from './agents/service/snapshot-sweep.ts';
import { agentEgressRules } from './agents/web.ts';
import type { NodeAdmin } from './api/routes/nodes.ts';
import type { Config } from './config.ts';
import { createEgress, createSharedBudgets, type Egress } from './egress/index.ts';
import { createAuthorities } from './egress/intercept/authority.ts';
import { createSandboxEgress, type SandboxEgress } from './egress/proxy/index.ts';
import { oneLine, SandboxError } from './errors.ts';
import { defaultSandboxMemory, prepareSandboxCgroup } from './sandbox/docker/cgroup.ts';
import type { DockerProvider, DockerProviderOptions } from './sandbox/docker/index.ts';
import type { SandboxNode } from './sandbox/nodes/types.ts';
import type { Store } from './store/index.ts';
import { replicaShareOf } from './store/replica-share.ts';

/** The sandbox image tag; the image is built by scripts/ (`npm start`), never from here. */
export const sandboxImageOf = (config: Config): string => {
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
export const workspaceStore = async (config: Config, log: (line: string) => void) => {
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

/** With replicas: this replica's pool owner (its lease holder), and whether another one still runs. */
export interface PoolOwners {
  owner: string;
  alive(owner: string): Promise<boolean>;
}

/** The pool owners of replicas on `store` (undefined without replicas): alive while they renew. */
export const poolOwnersOf = (store: Store, holder: string, leaseMs: number): PoolOwners | undefined => {
  const leases = store.leases;
  return leases === undefined ? undefined : { owner: holder, alive: (owner) => leases.alive(owner, leaseMs) };
};

/**
 * The cgroup the embedded node's sandboxes run under, when DSH_SANDBOX_CGROUP names one: made on
 * this host with its memory limit (sandbox/docker/cgroup.ts); CONFIG_INVALID when it cannot be.
 */
function sandboxCgroupOf(config: Config, log: (line: string) => void): { cgroupParent?: string } {
  if (config.sandboxCgroup === undefined || config.sandboxCgroup === '') return {};
  const bytes =
    config.sandboxCgroupMemoryMb > 0 ? config.sandboxCgroupMemoryMb * 1024 * 1024 : defaultSandboxMemory();
  const cgroupParent = prepareSandboxCgroup(config.sandboxCgroup, bytes);
  log(
    `sandboxes run under the cgroup ${cgroupParent}, ${Math.round(bytes / 1024 / 1024)} MiB of memory for all of them`,
  );
  return { cgroupParent };
}

/**
 * The docker provider on the local engine, acting for this store's instance: it adopts only its own
 * containers (and those of older versions that this store's agents name as their sandbox), so
 * several instances with their own data directories can share one engine; with replicas (`pools`),
 * the live replicas' pool containers are theirs. `overrides` replace what the configuration gives
 * (tests: a fixture's names, labels and workspaces).
 */
export const defaultProvider = async (
  config: Config,
  store: Store,
  log: (line: string) => void,
  egress: SandboxEgress['attach'],
  { pools, overrides }: { pools?: PoolOwners | undefined; overrides?: Partial<DockerProviderOptions> } = {},
): Promise<DockerProvider> => {
  const { createDockerProvider } = await import('./sandbox/docker/index.ts');
  const remote = await remoteNode(config, store, log);
  const options: DockerProviderOptions = {
    ...(remote === undefined ? {} : { node: remote }),
    image: sandboxImageOf(config),
    instance: store.instanceId,
    pool: { size: config.poolSize },
    workspaceSpares: config.workspaceSpares,
    onError: (e) => log(`sandbox: ${String(e)}`),
    defaults: { diskBytes: config.workspaceMb * 1024 * 1024 },
    ...(remote === undefined ? { workspaces: await workspaceStore(config, log) } : {}),
    ...(remote === undefined ? sandboxCgroupOf(config, log) : {}),
    spoolDir: config.spoolDir,
    egress,
    // For the embedded node (a remote node's engine is named by the node agent's own settings).
    engineRuntimes: { gvisor: config.gvisorRuntime },
    rollImage: config.sandboxImageRoll,
    ...(linksOf(config, log) === undefined ? {} : { links: config.linksDir }),
    ...overrides,
    ...(pools === undefined ? {} : { owner: pools.owner }),
  };
  const provider = createDockerProvider(options);
  // The engine's runtimes are read while the sandboxes are adopted (one engine round trip less before listening).
  const runtimes = provider.runtimes().then(
    (offered) =>
      log(`sandbox runtimes the ${remote === undefined ? 'engine' : 'node'} offers: ${offered.join(', ')}`),
    (e: unknown) => log(`could not read the engine's runtimes: ${String(e)}`),
  );
  const knownAt = Date.now();
  const agents = await store.agents.listAll({ includeDeleted: true });
  const recorded = agents.flatMap((a) => (a.sandboxId === undefined ? [] : [[a.sandboxId, a.id] as const]));
  const adopted = await provider
    .adopt({
      claim: recorded.map(([id]) => id),
      assigned: new Map(recorded),
      // A store restored to an older point: the containers of agents it does not know are reclaimed.
      known: agents.map((a) => a.id),
      knownAt,
      ...(pools === undefined ? {} : { replicas: { alive: pools.alive } }),
    })
    .catch((e: unknown) => {
      log(`could not list existing sandboxes: ${String(e)}`);
      return [];
    });
  log(`instance ${store.instanceId}: re-adopted ${adopted.length} agent sandbox(es)`);
  // Before anything is served: snapshot files a crash left without a record (agents/service/snapshot-sweep.ts).
  await sweepOrphanSnapshots({
    sweep: options.workspaces?.sweepSnapshots,
    snapshots: store.snapshots,
    dataDir: config.dataDir,
    workspacesDir: config.workspacesDir,
    checkpointDir: join(config.dataDir, 'checkpoints'),
  }).then(
    (done) => {
      if (done.kind === 'skipped') log(`snapshot files not swept: ${done.reason}`);
      else if (done.removed.length > 0)
        log(
          `removed ${done.removed.length} snapshot file(s) no snapshot or checkpoint names (left by a crash)`,
        );
    },
    (e: unknown) => log(`could not sweep the snapshot files no record names: ${String(e)}`),
  );
  // Not waited for: a slow node would hold the start, and the grace spares the files being made.
  if (remote !== undefined) void sweepRemoteSnapshots(remote, 'the nodes', store, config, log);
  await runtimes;
  return provider;
};

/**
 * The remote nodes' snapshot files no record names, swept (agents/service/snapshot-sweep.ts) once
 * the nodes are adopted, and a node's again when it answers again (remoteNode: one that did not
 * answer then, or was down since). Its outcome is a log line naming `where`; it never fails a call.
 */
async function sweepRemoteSnapshots(
  remote: SandboxNode<unknown>,
  where: string,
  store: Store,
  config: Config,
  log: (line: string) => void,
): Promise<void> {
  await sweepNodeSnapshots({
    node: remote,
    snapshots: store.snapshots,
    checkpointDir: join(config.dataDir, 'checkpoints'),
    replicas: store.leases !== undefined,
  }).then(
    (removed) => {
      if (removed.length > 0)
        log(`removed ${removed.length} snapshot file(s) on ${where} that no snapshot or checkpoint names`);
    },
    (e: unknown) =>
      log(`could not sweep the snapshot files on ${where} no record names: ${oneLine(String(e))}`),
  );
}

/** The PEM files of the node protocol (DSH_NODE_CERT, DSH_NODE_KEY, DSH_NODE_CA), read; CONFIG_INVALID when one is missing. */
export const nodeTls = (config: Config): { cert: string; key: string; ca: string } => {
  const read = (file: string | undefined, env: string): string => {
    if (file === undefined)
      throw new SandboxError(
        'CONFIG_INVALID',
        `${env} is not set: the node protocol needs a certificate, its key and the cluster's CA (docs/nodes.md).`,
      );
    try {
      return readFileSync(file, 'utf8');
    } catch (e) {
      throw new SandboxError('CONFIG_INVALID', `${env}: cannot read ${file} (${(e as Error).message}).`);
    }
  };
  return {
    cert: read(config.nodeCert, 'DSH_NODE_CERT'),
    key: read(config.nodeKey, 'DSH_NODE_KEY'),
    ca: read(config.nodeCa, 'DSH_NODE_CA'),
  };
};

/** How often each node is probed (its capacity), so a silent one fails its agents' calls at once. */
const NODE_PROBE_MS = 2000;

/**
 * The remote node(s) DSH_NODES names (docs/nodes.md), connected; undefined: the embedded node. One
 * node or several go behind placement (sandbox/nodes/placement.ts).
 */
const remoteNode = async (config: Config, store: Store, log: (line: string) => void) => {
  if (config.nodes.length === 0) return undefined;
  const { connectRemoteNode } = await import('./sandbox/nodes/remote/client.ts');
  const { lateRemoteNode } = await import('./sandbox/nodes/remote/late.ts');
  const tls = nodeTls(config);
  const options = config.nodes.map((n) => ({ ...n, instance: store.instanceId, ...tls }));
  const settled = await Promise.allSettled(options.map((o) => connectRemoteNode(o)));
  // A node that does not answer now is connected later (its agents fail with NODE_UNREACHABLE
  // meanwhile); any other failure (a certificate, another protocol) stops the start, as does no
  // node answering at all.
  const answered = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  for (const r of settled)
    if (r.status === 'rejected' && (r.reason as { code?: string }).code !== 'NODE_UNREACHABLE')
      throw r.reason;
  const [like] = answered;
  if (like === undefined) throw (settled[0] as PromiseRejectedResult).reason;
  const nodes = settled.map((r, i) => {
    if (r.status === 'fulfilled') return r.value;
    log(
      `node ${config.nodes[i]?.name}: does not answer at start (${String(r.reason)}); connected when it does`,
    );
    return lateRemoteNode(options[i] as (typeof options)[number], like);
  });
  for (const n of config.nodes) log(`sandboxes: on node ${n.name} (${n.url})`);
  const { createPlacement } = await import('./sandbox/nodes/placement.ts');
  if (config.nodesCordoned.length > 0)
    log(`nodes cordoned (no new agents): ${config.nodesCordoned.join(', ')}`);
  // Even one node goes behind placement: its agents' node is recorded, its health probed, and it
  // can be cordoned at run time.
  return createPlacement(nodes, {
    cordoned: config.nodesCordoned,
    store: store.nodes,
    // An agent with no recorded node goes only to a node whose find matches its record.
    agentOf: async (agentId) => {
      const a = await store.agents.byId(agentId);
      return a && (a.sandboxId === undefined ? {} : { sandboxId: a.sandboxId });
    },
    probeMs: NODE_PROBE_MS,
    // A node's words are escaped: a hostile node cannot forge a line of this log (oneLine).
    onError: (e) => log(`placement: ${oneLine(String(e))}`),
    onHealth: (name, reachable, error) => {
      log(
        reachable
          ? `node ${name}: answers again`
          : `node ${name}: unreachable (${error === undefined ? 'no answer' : oneLine(error)})`,
      );
      // Its snapshot files, as the start swept the others' (the start's sweep passed it over).
      const node = nodes.find((n) => n.name === name);
      if (reachable && node !== undefined)
        void sweepRemoteSnapshots(node, `node ${name}`, store, config, log);
    },
  });
};

/** The nodes of DSH_NODES for the admin routes (GET /v1/nodes, cordons), with their URLs; undefined on the embedded node. */
export const nodeAdminOf = async (
  config: Config,
  docker: DockerProvider | undefined,
): Promise<NodeAdmin | undefined> => {
  if (docker === undefined || config.nodes.length === 0) return undefined;
  const { isPlacement } = await import('./sandbox/nodes/placement.ts');
  const placed = docker.node;
  if (!isPlacement(placed)) return undefined;
  const urls = new Map(config.nodes.map((n) => [n.name, n.url]));
  return {
    list: async () =>
      (await placed.nodes()).map(({ name, ...rest }) => ({
        name,
        ...(urls.has(name) ? { url: urls.get(name) as string } : {}),
        ...rest,
      })),
    cordon: (name, cordoned) => placed.cordon(name, cordoned),
  };
};

/** The links folder, when sessions may use links: on, and an engine on this machine. */
export const linksOf = (config: Config, log: (line: string) => void): string | undefined => {
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

/** The egress gateway and web access of the agents' tools, and sandboxd's proxy over the same gateway. */
export function startEgress(
  config: Config,
  store: Store,
  log: (line: string) => void,
): { egress: Egress; sandboxEgress: SandboxEgress } {
  const share = replicaShareOf(store, config.replicaLeaseMs);
  const egress = createEgress({
    store: store.egress,
    wake: store.wake,
    events: store.events,
    agentRulesOf: agentEgressRules(store.agents),
    maxBudget: { connections: config.egressConnections, bytesPerHour: config.egressBytesPerHour },
    testHosts: config.egressTestHosts,
    ...(config.egressCaFile === undefined ? {} : { ca: upstreamCas(config.egressCaFile) }),
    ...(config.searxngUrl === undefined ? {} : { searxngUrl: config.searxngUrl }),
    web: { maxBytes: config.webFetchMaxBytes, timeoutMs: config.webFetchTimeoutMs },
    // On PostgreSQL the budgets hold for the tenant across replicas (central counters, leased).
    ...(store.limits === undefined || share === undefined
      ? {}
      : {
          budgets: createSharedBudgets({ usage: store.limits, liveWithinMs: config.replicaLeaseMs, share }),
        }),
  });
  if (config.egressTestHosts.length > 0)
    log(
      `egress: TEST HOSTS admitted despite their addresses (DSH_EGRESS_ALLOW_HOSTS_FOR_TESTS): ${config.egressTestHosts.map((h) => (h.port === undefined ? h.ip : `${h.ip}:${h.port}`)).join(', ')}`,
    );
  // Sandbox egress (sandboxd's proxy) is the docker provider's; attributed to the sandbox's agent.
  const sandboxEgress = createSandboxEgress({
    gateway: egress.gateway,
    callerOf: async (agentId) => {
      const agent = await store.agents.byId(agentId);
      return agent && { tenantId: agent.tenantId, agentId, sessionId: agentId, via: 'proxy' };
    },
    maxTunnels: config.egressSandboxTunnels,
    headersTimeoutMs: config.headersTimeoutMs,
    intercept: createAuthorities({ store: store.egress }),
    onError: (e) => log(`egress proxy: ${String(e)}`),
  });
  return { egress, sandboxEgress };
}
