// A node's snapshot calls, or SNAPSHOT_UNSUPPORTED naming it (placement.ts, remote/late.ts, remote/server.ts).
import { SandboxError } from '../../errors.ts';
import type { SandboxNode } from './types.ts';

export function snapshotsOf(
  node: SandboxNode<unknown>,
): Required<Pick<SandboxNode<unknown>, 'snapshot' | 'dropSnapshot'>> {
  const { snapshot, dropSnapshot } = node;
  if (snapshot === undefined || dropSnapshot === undefined)
    throw new SandboxError('SNAPSHOT_UNSUPPORTED', `Node ${node.name} keeps no workspace snapshots.`, {
      data: { node: node.name },
    });
  return { snapshot: snapshot.bind(node), dropSnapshot: dropSnapshot.bind(node) };
}
