// An agent's whole workspace as its snapshot checkpoints see it (../checkpoints/agent.ts
// CheckpointWorkspace): a snapshot before each bash call the tenant asks to cover
// (`checkpoints.snapshotBash`), taken by the provider like POST /v1/agents/:id/snapshots but kept
// as a checkpoint (not a row of the tenant's snapshots, not in its snapshotBytes quota: the
// checkpoint bounds hold it), and a rollback across one: the agent's sandbox destroyed and made
// again from a copy of the snapshot, as `fromSnapshot` makes a new agent's.
// Invariants: only an agent that owns its workspace has one (a child sharing its parent's takes
// no snapshots: a rollback of the child must not turn back its parent's workspace); the restore
// runs under the sandbox binding's hold, so no use of the sandbox starts while it is replaced.
import { nanoid } from 'nanoid';
import type { Sandbox, SandboxProvider } from '../../sandbox/types.ts';
import type { CheckpointWorkspace } from '../checkpoints/agent.ts';
import { sandboxLimits } from '../sandbox-limits.ts';
import type { Agent } from '../types.ts';
import { ownsNone, type SandboxBinding } from './sandbox.ts';

/** How a checkpoint's snapshot id begins (the start's sweeps tell them from other snapshots: snapshot-sweep.ts). */
export const CHECKPOINT_SNAPSHOT = 'ckpt_';

export interface WorkspaceDeps {
  provider: SandboxProvider;
  sandboxes: SandboxBinding;
  agents: { setSandboxId(id: string, sandboxId: string): Promise<unknown> };
}

/** The agent's workspace for snapshot checkpoints; undefined where it cannot be snapshotted. */
export function checkpointWorkspace(deps: WorkspaceDeps, agent: Agent): CheckpointWorkspace | undefined {
  const { provider, sandboxes } = deps;
  const { snapshot, dropSnapshot } = provider;
  if (snapshot === undefined || dropSnapshot === undefined || ownsNone(agent)) return undefined;
  return {
    async take() {
      await sandboxes.of(agent); // a workspace to copy (its first call may be this bash)
      const id = `${CHECKPOINT_SNAPSHOT}${nanoid(16)}`;
      const taken = await snapshot.call(provider, agent.id, id);
      return { snapshot: { id, node: taken.node, sizeBytes: taken.sizeBytes }, bytes: taken.bytes };
    },
    async restore(held): Promise<Sandbox> {
      // A paused agent is resumed (or AGENT_PAUSED refuses, as its tenant says) before anything goes.
      await sandboxes.of(agent);
      await sandboxes.hold(agent.id, async () => {
        await sandboxes.release(agent.id);
        await provider.destroy(agent.id);
        const made = await provider.create({
          tenantId: agent.tenantId,
          agentId: agent.id,
          limits: { ...sandboxLimits(agent.config.sandbox), diskBytes: held.sizeBytes },
          ...(agent.config.sandbox?.runtime === undefined ? {} : { runtime: agent.config.sandbox.runtime }),
          fromSnapshot: held.id,
        });
        await deps.agents.setSandboxId(agent.id, made.id);
      });
      return sandboxes.of(agent); // re-adopted by agent id: the sandbox just made
    },
  };
}
