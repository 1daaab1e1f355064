// One agent's checkpoints, as its tools (`services.checkpoints`), the upload routes and POST
// /v1/agents/:id/rollback reach them: the tracker and rollback bound to the agent and its sandbox,
// and every rollback logged in its session (`agent.rollback`, log-only: the audit timeline shows
// it, the model's history does not; the model's own rollback is its tool result besides).
import type { Sandbox } from '../../sandbox/types.ts';
import type { EventLog } from '../../store/types.ts';
import { type RestoreWorkspace, rollback } from './rollback.ts';
import type { CheckpointTracker, TakeSnapshot, TrackedCall } from './tracker.ts';
import type { CheckpointView, RollbackTarget, RollbackView } from './types.ts';

declare module '../../tools/types.ts' {
  interface ToolServices {
    /** The agent's checkpoints (./agent.ts); absent where the service keeps none. */
    checkpoints?: AgentCheckpoints;
  }
}

export interface AgentCheckpoints {
  track<T>(call: TrackedCall, run: () => Promise<T>): Promise<T>;
  /** track() in two halves (an archive's files are known only once it was checked). */
  begin(sandbox: Sandbox, call: TrackedCall): Promise<() => Promise<void>>;
  /** A workspace snapshot before an untracked call, where the tenant asks for it (tracker.snapshot). */
  snapshotBefore(call: Omit<TrackedCall, 'paths'>): Promise<void>;
  mark(callId: string, label?: string): Promise<CheckpointView>;
  list(): Promise<CheckpointView[]>;
  /** `via`: who asked (the API's client, or the model's `rollback` tool), as the event says. */
  rollback(target: RollbackTarget, via: 'api' | 'tool'): Promise<RollbackView>;
}

export interface CheckpointAgent {
  id: string;
  tenantId: string;
  sessionId: string;
}

/** The agent's whole workspace, where it can be snapshotted (a loop workspace it owns). */
export interface CheckpointWorkspace {
  take: TakeSnapshot;
  restore: RestoreWorkspace;
}

export function agentCheckpoints(
  tracker: CheckpointTracker,
  events: Pick<EventLog, 'append'>,
  agent: CheckpointAgent,
  sandboxOf: () => Promise<Sandbox>,
  workspace?: CheckpointWorkspace,
): AgentCheckpoints {
  return {
    async track(call, run) {
      return tracker.track(agent.tenantId, agent.id, await sandboxOf(), call, run);
    },
    begin: (sandbox, call) => tracker.begin(agent.tenantId, agent.id, sandbox, call),
    async snapshotBefore(call) {
      if (workspace !== undefined) await tracker.snapshot(agent.tenantId, agent.id, call, workspace.take);
    },
    mark: (callId, label) => tracker.mark(agent.tenantId, agent.id, callId, label),
    list: () => tracker.list(agent.id),
    async rollback(target, via) {
      const view = await rollback(tracker, agent.id, sandboxOf, target, workspace?.restore);
      await events.append([
        {
          sessionId: agent.sessionId,
          type: 'agent.rollback',
          surface: 'log-only',
          data: { ...view, via },
        },
      ]);
      return view;
    },
  };
}
