// An isolated child's workspace as a fork of its parent's (the agent whose workspace it copies:
// sandbox.ts ownerAbove): where the provider has snapshots, the parent's workspace is snapshotted
// (consistent: its writes held while the copy is made) and the child's sandbox made from that
// snapshot, which is then deleted; a block copy of the file system instead of a tar of its files
// through the control plane (bench/snapshot.ts). Elsewhere (no snapshots: Docker volumes, a remote
// node, the memory provider), or when the child asks for another disk size than its parent's
// workspace has (a file system is not resized), the caller seeds it with the tar copy as before.
// Where nodes are several, the snapshot is on the parent's node and the child is placed there with
// it; while that node is cordoned (NODE_CORDONED) the child goes elsewhere with the tar copy.
// Invariants: the transient snapshot is never in the store (it is nobody's to list or count) and
// is deleted whatever the create met; a crash between the two leaves its file under the node's
// snapshots folder.
import { nanoid } from 'nanoid';
import { isSandboxError } from '../../errors.ts';
import type { Sandbox, SandboxProvider, SandboxSpec } from '../../sandbox/types.ts';

/** The child's sandbox made from a snapshot of `ownerId`'s workspace; undefined where that cannot be. */
export async function forkedSandbox(
  provider: SandboxProvider,
  spec: SandboxSpec,
  ownerId: string,
): Promise<Sandbox | undefined> {
  const { snapshot, dropSnapshot } = provider;
  if (snapshot === undefined || dropSnapshot === undefined) return undefined;
  const id = `fork_${nanoid(16)}`;
  const taken = await snapshot(ownerId, id).catch((e: unknown) => {
    if (isSandboxError(e) && e.code === 'SNAPSHOT_UNSUPPORTED') return undefined;
    throw e;
  });
  if (taken === undefined) return undefined;
  try {
    const asked = spec.limits?.diskBytes;
    if (asked !== undefined && asked !== taken.sizeBytes) return undefined;
    return await provider
      .create({
        ...spec,
        limits: { ...spec.limits, diskBytes: taken.sizeBytes },
        fromSnapshot: id,
        snapshotNode: taken.node,
      })
      .catch((e: unknown) => {
        if (isSandboxError(e) && e.code === 'NODE_CORDONED') return undefined;
        throw e;
      });
  } finally {
    await dropSnapshot(id, taken.node).catch(() => undefined);
  }
}
