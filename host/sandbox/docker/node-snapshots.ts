// The embedded node's snapshots (nodes/types.ts snapshot, dropSnapshot): an agent's workspace
// copied by its workspace store (workspaces/loop-snapshots.ts: the file system frozen while the
// copy is made), and a snapshot's file deleted. An agent made from a snapshot is provision.ts's
// (the workspace store's create `from`). The sweep of files no record keeps is the workspace
// store's (loop-snapshots.ts sweepSnapshots) over this node's folder: on a node agent, the
// instance's own (serve-node.ts instanceWorkspaces), asked by that instance's control plane.
// Invariants: a snapshot waits for a stop or pause of the agent in progress, so it never copies a
// workspace while its container is being stopped; its copy is admitted on the host disk as a
// workspace of its tenant's would be (CAPACITY_EXCEEDED, nothing copied, when it does not fit); a store without snapshots (Docker volumes)
// answers SNAPSHOT_UNSUPPORTED and copies nothing.
import { SandboxError } from '../../errors.ts';
import type { NodeSnapshot } from '../nodes/types.ts';
import { lookup } from './lookup.ts';
import type { NodeBase } from './node-state.ts';
import { othersAbout } from './provision.ts';

const unsupported = (): SandboxError =>
  new SandboxError(
    'SNAPSHOT_UNSUPPORTED',
    'Workspaces here have no snapshots: they are Docker volumes without a size limit (DSH_DISK_QUOTA=off).',
  );

export async function snapshotAgent(s: NodeBase, agentId: string, id: string): Promise<NodeSnapshot> {
  const entry = s.entries.get(agentId) ?? (await lookup(s, agentId))?.entry;
  if (entry === undefined || entry.destroyed)
    throw new SandboxError('SANDBOX_UNAVAILABLE', `Agent ${agentId} has no sandbox on this node.`, {
      data: { agentId },
    });
  if (s.workspaces.snapshot === undefined || entry.workspace === undefined) throw unsupported();
  while (entry.stopping) await entry.stopping.catch(() => undefined);
  // Its copy is admitted on the host disk like a workspace, a further use of its tenant's while
  // another tenant is about (loop-admission.ts admittedCopy).
  const further = entry.tenantId !== undefined && othersAbout(s, entry.tenantId);
  return s.workspaces.snapshot(entry.workspace, id, further);
}

export async function dropSnapshotOf(s: NodeBase, id: string): Promise<void> {
  await s.workspaces.dropSnapshot?.(id);
}

/** The files of this node's snapshot folder no record keeps, removed (WorkspaceStore.sweepSnapshots); none without snapshots. */
export async function sweepSnapshotsOf(
  s: NodeBase,
  recorded: (ids: string[]) => Promise<ReadonlySet<string>>,
): Promise<string[]> {
  return (await s.workspaces.sweepSnapshots?.(recorded)) ?? [];
}
