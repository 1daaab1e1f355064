// A remote node that did not answer at the control plane's start (docs/nodes.md, "Faults"): the
// control plane starts anyway, and this stands in for the node, connecting (connectRemoteNode) at
// its first call and again after each failed attempt, so placement's probe brings it in as soon as
// it answers. Until then every call fails with the connection's NODE_UNREACHABLE naming the node.
// Every call of a remote node's client is here, its snapshot calls included (without them, a node
// late at start could never take or give a snapshot in this process's life).
// Invariants: the node's limits are those of a node that answered (`like`) until it is connected;
// the node itself still checks every spec against its own maxima; one connection attempt at a time.
import { snapshotsOf } from '../snapshots-of.ts';
import type { SandboxNode, WarmHooks } from '../types.ts';
import { connectRemoteNode, type RemoteNode, type RemoteNodeOptions } from './client.ts';

export function lateRemoteNode(
  options: RemoteNodeOptions,
  like: Pick<SandboxNode<never>, 'defaults' | 'maxima'>,
): RemoteNode {
  let node: RemoteNode | undefined;
  let connecting: Promise<RemoteNode> | undefined;
  let hooks: WarmHooks | undefined; // given to the node once it is connected
  const connected = async (): Promise<RemoteNode> => {
    if (node !== undefined) return node;
    connecting ??= connectRemoteNode(options).then(
      (n) => {
        node = n;
        if (hooks !== undefined) n.warmWith?.(hooks);
        return n;
      },
      (e: unknown) => {
        connecting = undefined;
        throw e;
      },
    );
    return connecting;
  };
  return {
    name: options.name,
    get defaults() {
      return node?.defaults ?? like.defaults;
    },
    get maxima() {
      return node?.maxima ?? like.maxima;
    },
    pool: {
      get ready() {
        return node?.pool.ready ?? 0;
      },
      filled: async () => (await connected()).pool.filled(),
    },
    ensure: async (spec) => (await connected()).ensure(spec),
    find: async (agentId) => (await connected()).find(agentId),
    open: async (agentId, openOptions) => (await connected()).open(agentId, openOptions),
    state: async (agentId) => (await connected()).state(agentId),
    stop: async (agentId) => (await connected()).stop(agentId),
    pause: async (agentId, mode) => (await connected()).pause(agentId, mode),
    destroy: async (agentId) => (await connected()).destroy(agentId),
    usage: async (agentId, usageOptions) => (await connected()).usage(agentId, usageOptions),
    adopt: async (adoptOptions) => (await connected()).adopt(adoptOptions),
    // A remote node has snapshot calls (a node without snapshots answers SNAPSHOT_UNSUPPORTED):
    // so has its stand-in, else placement would take it for a node that keeps none for good.
    snapshot: async (agentId, id) => snapshotsOf(await connected()).snapshot(agentId, id),
    dropSnapshot: async (id) => snapshotsOf(await connected()).dropSnapshot(id),
    sweepSnapshots: async (recorded) => (await connected()).sweepSnapshots?.(recorded) ?? [],
    capacity: async () => (await connected()).capacity(),
    warmWith(h) {
      hooks = h;
      node?.warmWith?.(h);
    },
    close: async () => node?.close(),
  };
}
