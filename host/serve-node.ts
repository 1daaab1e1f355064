// The node agent (`host/cli.ts node`, docs/nodes.md): this machine's Docker engine, workspaces, warm
// pool and link folders, served to control planes over the node protocol with mutual TLS
// (sandbox/nodes/remote/server.ts). One embedded node per control-plane instance that calls, made
// on its first call with this process's settings (the sandbox image, pool size, workspaces, links).
// Invariants: it does not start without its certificate, key and the cluster's CA; it never
// listens in plain HTTP; each instance's sandboxes are apart (names and labels carry the instance),
// and so are its snapshots (its node's workspace store is instanceWorkspaces': a folder of
// snapshots per instance, so another instance's ensure-from, snapshot and drop find nothing of
// it); a control plane acts only for the instances its certificate names (server.ts), and sweeps
// only its own folder of snapshot files (nodes/remote/snapshot-sweep.ts). While it relays calls
// its idle CPUs poll (DSH_IDLE_POLL, as `serve`'s: host/idle-poll.ts; the state rides on its
// `capacity` answers, which GET /v1/nodes shows).

import type { Config } from './config.ts';
import { oneLine, SandboxError } from './errors.ts';
import { createIdlePoll } from './idle-poll.ts';
import type { DockerNode, WorkspaceStore } from './sandbox/docker/index.ts';
import { type NodeServer, serveNode } from './sandbox/nodes/remote/server.ts';
import { linksOf, nodeTls, sandboxImageOf, workspaceStore } from './serve-sandboxes.ts';

/** `host:port` (an IPv6 host in brackets). */
const listenOf = (raw: string): { host: string; port: number } => {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(raw);
  const port = Number(m?.[3]);
  if (!m || port > 65535)
    throw new SandboxError('CONFIG_INVALID', `DSH_NODE_LISTEN must be host:port, got "${raw}".`);
  return { host: (m[1] ?? m[2]) as string, port };
};

/**
 * The workspace store instance `instance`'s node gets: the machine's workspaces (one admission, one
 * set of spares) with that instance's snapshots alone (workspaces.ts forInstance). A store that
 * snapshots but cannot keep instances apart is refused rather than shared.
 */
export const instanceWorkspaces = (store: WorkspaceStore, instance: string): WorkspaceStore => {
  if (store.forInstance !== undefined) return store.forInstance(instance);
  if (store.snapshot === undefined) return store;
  throw new SandboxError(
    'CONFIG_INVALID',
    `The ${store.kind} workspaces cannot keep each instance's snapshots apart; a node agent cannot serve them.`,
  );
};

/**
 * At start, the flat snapshot folder an older version wrote (loop-snapshots.ts): its copies'
 * temporary files (`<id>.tmp`, which no version reads) are removed once past the same grace as an
 * instance's (sweepTemps; no instance's adoption looks there), and how many snapshot files no
 * instance is served is said (cli-node.ts).
 */
export async function tidyFlatSnapshots(root: string, log: (line: string) => void): Promise<void> {
  const { unassignedSnapshots } = await import('./sandbox/docker/workspaces/loop-unassigned.ts');
  const { snapshotFolder, sweepTemps } = await import('./sandbox/docker/workspaces/loop-snapshots.ts');
  const temps = await sweepTemps(snapshotFolder(root));
  if (temps > 0)
    log(`node: removed ${temps} temporary snapshot file(s) an older version's crashed copies left`);
  const ids = await unassignedSnapshots(root);
  if (ids.length > 0)
    log(
      `node: ${ids.length} snapshot file(s) kept before each instance had its own folder are served to no instance; \`dsh-sandbox node snapshots\` lists them, docs/nodes.md says how to give each to its instance`,
    );
}

/** Starts the node agent; prints `listening https://host:port` once it serves. */
export async function serveNodeAgent(
  config: Config,
  log: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<NodeServer & { nodes: Map<string, DockerNode> }> {
  const tls = nodeTls(config);
  const { host, port } = listenOf(config.nodeListen);
  const image = sandboxImageOf(config);
  const { createDockerNode } = await import('./sandbox/docker/index.ts');
  const workspaces = await workspaceStore(config, log);
  if (workspaces?.kind === 'loop') await tidyFlatSnapshots(config.workspacesDir, log);
  const links = linksOf(config, log);
  const nodes = new Map<string, DockerNode>();
  const nodeFor = (instance: string): DockerNode => {
    let node = nodes.get(instance);
    if (!node) {
      node = createDockerNode({
        name: config.nodeListen,
        image,
        instance,
        pool: { size: config.poolSize },
        workspaceSpares: config.workspaceSpares,
        onError: (e) => log(`node: ${String(e)}`),
        defaults: { diskBytes: config.workspaceMb * 1024 * 1024 },
        diskPath: config.workspacesDir,
        // The runtimes this machine's engine offers (runsc as DSH_GVISOR_RUNTIME names it); which
        // tenants may ask for one is the control plane's decision (DSH_GVISOR_TENANTS there).
        engineRuntimes: { gvisor: config.gvisorRuntime },
        rollImage: config.sandboxImageRoll,
        ...(workspaces === undefined ? {} : { workspaces: instanceWorkspaces(workspaces, instance) }),
        ...(links === undefined ? {} : { links }),
      });
      nodes.set(instance, node);
      log(`node: serving instance ${instance}`);
    }
    return node;
  };
  const idlePoll = createIdlePoll({ enabled: config.idlePoll, lingerMs: config.idlePollLingerMs });
  const server = await serveNode({
    host,
    port,
    ...tls,
    nodeFor,
    idlePoll,
    onError: (e) => log(`node: ${String(e)}`),
    // The reasons carry the peer's certificate (its CN): escaped, so it cannot forge a log line.
    onRefused: (from, reason) => log(`node: refused a connection from ${from}: ${oneLine(reason)}`),
    onForbidden: (from, instance, cert) =>
      log(
        `node: refused instance ${instance} to ${from}: its certificate does not name it (${oneLine(cert)})`,
      ),
  });
  log(`listening https://${host.includes(':') ? `[${host}]` : host}:${server.port}`);
  return {
    port: server.port,
    nodes,
    async close() {
      await server.close();
      idlePoll.close();
      for (const node of nodes.values()) await node.close();
    },
  };
}

/** How long a stopping node agent gives its close (sessions, pool) before it exits regardless. */
const STOP_MS = 10_000;

/**
 * Serves until SIGTERM or SIGINT, then closes (every channel and link at once: the control planes
 * see their sessions end and fail their calls with NODE_UNREACHABLE) and resolves: within
 * STOP_MS, or at a second signal, whatever close still waits on. Containers stay for the next start.
 */
export async function untilSignalled(
  agent: NodeServer,
  log: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<void> {
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  log(`node: ${signal}: closing its sessions and stopping`);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`not closed within ${STOP_MS} ms`), STOP_MS);
    process.once('SIGTERM', () => resolve('a second signal'));
    process.once('SIGINT', () => resolve('a second signal'));
  });
  const why = await Promise.race([
    agent.close().then(
      () => undefined,
      (e: unknown) => `close failed: ${String(e)}`,
    ),
    late,
  ]);
  clearTimeout(timer);
  log(why === undefined ? 'node: stopped' : `node: stopping anyway (${why})`);
}
