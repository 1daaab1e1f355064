// The embedded node's ensure(): an agent's sandbox is its container when it has one (lookup.ts),
// else a pooled one that still answers, else a new one; and the warm pool's items, made and
// discarded (pool.ts keeps them). A pool hit makes no Docker call before the agent is ready: the
// rename to the agent's name follows in the background (destroy waits for it), and adopt()
// finishes one a crash interrupted.
// Invariants: a pooled container is assigned only when the agent asks for the default disk size
// (a file system is not resized) and the default runtime (the pool's containers run under runc),
// and never to an agent whose workspace starts from a snapshot; one a control plane claimed (pool.ts)
// only to an ensure that presents its claim (`spec.pooled`); a
// runtime the engine does not offer is refused (RUNTIME_UNAVAILABLE) before anything is made; a
// pooled one that fails to be assigned is discarded, reported
// and skipped; what the warm hook made for a pooled one goes to the caller with it; a tenant's
// further workspace (shareOf) is refused CAPACITY_EXCEEDED from the pool as a cold create would be,
// so a pooled sandbox never goes to a tenant over its share of the disk.
import { nanoid } from 'nanoid';
import type { NodeSandboxSpec, Placed, SandboxdChannel } from '../nodes/types.ts';
import { DEFAULT_RUNTIME, type SandboxRuntime } from '../runtimes.ts';
import type { SandboxLimits } from '../types.ts';
import { openChannel } from './channel.ts';
import { LABEL_POOL, LABEL_POOL_OWNER, resourceConfig } from './config.ts';
import { fromDocker } from './errors.ts';
import { lookup } from './lookup.ts';
import {
  agentLabels,
  createContainer,
  type Entry,
  type MadeContainer,
  type NodeBase,
  type NodeState,
  removeWith,
} from './node-state.ts';
import type { PoolItem } from './pool.ts';
import type { DiskShare } from './workspaces.ts';

/** A started container with the default limits that no agent owns yet, its channel open and warmed. */
export async function makeWarm(s: NodeBase): Promise<PoolItem> {
  const { container, workspace, link } = await createContainer(
    s,
    s.names.pool(nanoid(10)),
    { ...s.ownLabels, [LABEL_POOL]: '1', [LABEL_POOL_OWNER]: s.owner },
    s.defaults,
  );
  try {
    const channel = await openChannel(container, {
      created: true,
      ...(link === undefined ? {} : { link }),
      ...(s.links === undefined ? {} : { links: s.links }),
    });
    try {
      return { container, workspace, channel, warm: await s.warm.make(channel, s.defaults) };
    } catch (e) {
      channel.close();
      throw e;
    }
  } catch (e) {
    await removeWith(s, container, workspace);
    throw e;
  }
}

export async function discardWarm(s: NodeBase, item: PoolItem): Promise<void> {
  await s.warm.drop(item.warm).catch(() => {});
  item.channel.close();
  await removeWith(s, item.container, item.workspace);
}

/**
 * A container for a new agent: a pooled one when the pool has one that still answers (one that
 * vanished or fails is discarded, reported and skipped), else a new one.
 */
async function provision(
  s: NodeState,
  spec: NodeSandboxSpec & { runtime: SandboxRuntime },
  limits: SandboxLimits,
  share: DiskShare | undefined,
): Promise<MadeContainer & { warm?: unknown; renaming?: Promise<void>; pending?: SandboxdChannel }> {
  const { agentId, tenantId, runtime } = spec;
  const name = s.names.agent(agentId);
  // A pooled workspace has the default size (a file system is not resized on assignment), and a
  // pooled container the default runtime.
  const fitsPool =
    limits.diskBytes === s.defaults.diskBytes &&
    runtime === DEFAULT_RUNTIME &&
    spec.fromSnapshot === undefined;
  // A tenant's further workspace is refused from the pool as a new one would be (the pool is
  // refilled). A first one takes a pooled workspace, whose room was taken when it was made.
  if (share === 'further' && fitsPool && s.pool.ready > 0)
    await s.workspaces.admitsFurther?.(limits.diskBytes ?? 0);
  const attempts = fitsPool ? s.pool.ready : 0;
  // While other tenants are about, a tenant's burst leaves them a quarter of the pool (pool.ts).
  const taker = s.tenants.size > 1 ? tenantId : undefined;
  for (let i = 0; i < attempts; i++) {
    const item = s.pool.take(spec.pooled, taker);
    if (!item) break;
    try {
      if (JSON.stringify(limits) !== JSON.stringify(s.defaults))
        await item.container.update(resourceConfig(limits));
      // Off the path to ready: the store records the container id before the agent's first call,
      // and adopt() finishes a rename a crash interrupted (see the header).
      const renaming = item.container.rename({ name }).catch((e: unknown) => {
        s.onError(fromDocker(e, 'Naming an assigned pooled sandbox', { agentId }));
      });
      // Nothing made on its channel (no warm hook) and nobody holds it (no claim): the agent's
      // first open() takes the channel. A claimed one is the claiming control plane's session.
      const pending = item.warm === undefined && item.claim === undefined ? item.channel : undefined;
      return { container: item.container, workspace: item.workspace, warm: item.warm, renaming, pending };
    } catch (e) {
      s.onError(fromDocker(e, 'Assigning a pooled sandbox (a new one is made instead)', { agentId }));
      void discardWarm(s, item).catch(s.onError);
    }
  }
  return createContainer(s, name, agentLabels(s, agentId, tenantId), limits, undefined, runtime, {
    ...(spec.fromSnapshot === undefined ? {} : { fromSnapshot: spec.fromSnapshot }),
    ...(share === undefined ? {} : { share }),
  });
}

/**
 * The agent's new workspace's share of the disk (WorkspaceStore.create): undefined while its tenant
 * is alone here; else `further` when the tenant holds a sandbox here already (one adopt() found
 * counts: `dormant`) or has a create under way (a burst of creates at once is one first and further
 * ones), `first` when it is larger than the node's default size, otherwise none; another tenant is
 * about once it asked this node for one since start or holds one here (children are their
 * tenant's). One tenant alone (the embedded default's) may fill the disk; once another is about, a
 * further workspace leaves a quarter open for tenants that hold none, and a large first one takes
 * at most that quarter past what it leaves (loop-admission.ts): a newcomer's agent of the default
 * size is what the quarter is kept for, whatever its size against the quarter's.
 */
export function shareOf(
  s: NodeBase,
  spec: { agentId: string; tenantId: string; limits: SandboxLimits },
): DiskShare | undefined {
  const holds = holdsHere(s, spec);
  if (s.tenants.size <= 1) return undefined;
  if (holds) return 'further';
  return (spec.limits.diskBytes ?? 0) > (s.defaults.diskBytes ?? 0) ? 'first' : undefined;
}

/**
 * Whether a tenant other than `tenantId` asked this node for a sandbox since start or holds one
 * here: then a further use of `tenantId`'s (a snapshot of its agent's workspace: node-snapshots.ts)
 * leaves the reserve open.
 */
export function othersAbout(s: NodeBase, tenantId: string): boolean {
  holdsHere(s, { tenantId });
  return s.tenants.size > 1;
}

/**
 * Whether the tenant holds a sandbox here (but `agentId`'s), or has a create under way; notes
 * every tenant found in `s.tenants`.
 */
function holdsHere(s: NodeBase, spec: { agentId?: string; tenantId: string }): boolean {
  s.tenants.add(spec.tenantId);
  let holds = (s.creating.get(spec.tenantId) ?? 0) > 0;
  for (const e of s.entries.values()) {
    if (e.destroyed || e.tenantId === undefined || e.agentId === spec.agentId) continue;
    if (e.tenantId === spec.tenantId) holds = true;
    else s.tenants.add(e.tenantId);
  }
  for (const tenant of s.dormant.values()) {
    if (tenant === spec.tenantId) holds = true;
    else s.tenants.add(tenant);
  }
  return holds;
}

/** The node's ensure(): the agent's sandbox, found or placed (see the header). */
export async function ensureSandbox(s: NodeState, spec: NodeSandboxSpec): Promise<Placed<unknown>> {
  const existing = await lookup(s, spec.agentId);
  if (existing) return { id: existing.id, limits: existing.entry.limits, found: true };
  const runtime = spec.runtime ?? DEFAULT_RUNTIME;
  await s.runtimes.require(runtime);
  // Counted from the check on (no wait between): a create of the tenant's at once is a further one.
  const share = shareOf(s, spec);
  s.creating.set(spec.tenantId, (s.creating.get(spec.tenantId) ?? 0) + 1);
  try {
    return await place(s, { ...spec, runtime }, share);
  } finally {
    const left = (s.creating.get(spec.tenantId) ?? 1) - 1;
    if (left > 0) s.creating.set(spec.tenantId, left);
    else s.creating.delete(spec.tenantId);
  }
}

/** A new container for the agent (provision), recorded as its entry. */
async function place(
  s: NodeState,
  spec: NodeSandboxSpec & { runtime: SandboxRuntime },
  share: DiskShare | undefined,
): Promise<Placed<unknown>> {
  const { limits, runtime } = spec;
  const { container, workspace, warm, renaming, link, pending } = await provision(s, spec, limits, share);
  const fresh = {
    container,
    limits,
    workspace,
    link,
    tenantId: spec.tenantId,
    runtime,
    created: renaming === undefined, // a pooled container runs already
    destroyed: false,
    pending,
    ...(renaming === undefined ? {} : { renaming }),
  };
  // A known entry whose container vanished takes the new one.
  const entry: Entry | undefined = s.entries.get(spec.agentId);
  entry?.pending?.close();
  if (entry) Object.assign(entry, fresh);
  else s.entries.set(spec.agentId, { agentId: spec.agentId, ...fresh });
  return { id: container.id, limits, ...(warm === undefined ? {} : { warm }) };
}
