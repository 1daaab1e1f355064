// One agent's checkpoints, as its tools (`services.checkpoints`), the upload routes and POST
// /v1/agents/:id/rollback reach them: the tracker and rollback bound to the agent and its sandbox,
// and every rollback logged in its session (`agent.rollback`, log-only: the audit timeline shows
// it, the model's history does not; the model's own rollback is its tool result besides).
// A rollback while a call batch of the agent runs is refused (ROLLBACK_BUSY), not queued behind it:
// the running call (a long bash, a job's start, a program) may change the very files the rollback
// restores, after the rollback checked them; waiting for it could hold the request for as long as
// the call's timeout, and what the client decided to undo would no longer be what it sees once
// the call ended. The client waits for its batch (or interrupts it) and asks again. The model's
// own `rollback` runs inside a batch of the agent: that one batch is allowed (its other calls run
// beside it as the model asked).
import { SandboxError } from '../../errors.ts';
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

/** The agent's call batches running now in this process (its family's owner with replicas). */
export type RunningBatches = () => number;

function refuseBusy(agent: CheckpointAgent, running: number): void {
  throw new SandboxError(
    'ROLLBACK_BUSY',
    `Agent ${agent.id} has ${running} call batch${running === 1 ? '' : 'es'} running; roll back once ${running === 1 ? 'it has' : 'they have'} ended (or interrupt ${running === 1 ? 'it' : 'them'} first): a call still running could change the files the rollback restores.`,
    { data: { agentId: agent.id, running } },
  );
}

export function agentCheckpoints(
  tracker: CheckpointTracker,
  events: Pick<EventLog, 'append'>,
  agent: CheckpointAgent,
  sandboxOf: () => Promise<Sandbox>,
  workspace?: CheckpointWorkspace,
  running: RunningBatches = () => 0,
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
      // The model's rollback tool runs in a batch of its own agent: that batch is not a reason to refuse.
      const others = running() - (via === 'tool' ? 1 : 0);
      if (others > 0) refuseBusy(agent, others);
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
