// The parts of the agent service that reach each other late (service.ts wires them): the live
// agents reach the plugin host and the team service, deletion tells the team service, the team
// service creates and removes agents. Each such reach reads the state (state.ts) when it is
// called, never when it is built, so the order of building is service.ts's alone.

import { createPluginHost, type PluginHost } from '../../cordis/host.ts';
import { SandboxError } from '../../errors.ts';
import { createAgentSession } from '../../session/state.ts';
import { createMemorySessionStateStore } from '../../store/index.ts';
import { createTeamService, type TeamService } from '../../teams/service.ts';
import { teamToolsFor } from '../../teams/tools.ts';
import { createRequestSpawner } from '../../tools/workflow/index.ts';
import { type AgentCheckpoints, agentCheckpoints } from '../checkpoints/agent.ts';
import type { Agent, ToolRuntime } from '../types.ts';
import { checkpointWorkspace } from './checkpoint-workspace.ts';
import { createDeletion, type Deletion } from './deletion.ts';
import { createLiveAgents, type LiveAgents } from './live.ts';
import { createPauses, type Pauses } from './pause.ts';
import { remoteDefiner } from './remote.ts';
import { type AgentSnapshots, createAgentSnapshots } from './snapshots.ts';
import { type AgentServiceState, removeAgent } from './state.ts';

export function liveAgentsFor(state: AgentServiceState, runtime: ToolRuntime): LiveAgents {
  const { options, store } = state;
  const spawn =
    options.spawn ?? createRequestSpawner(store.requests, options.now ? { now: options.now } : {});
  const sessionState = store.sessionState ?? createMemorySessionStateStore();
  return createLiveAgents({
    agents: store.agents,
    runtime,
    marks: state.marks,
    defineRemote: remoteDefiner(store.requests, options.now),
    sandboxOf: state.sandboxes.of,
    spawn,
    pluginsOf: (agent) => state.plugins?.of(agent),
    ...(options.checkpoints === undefined
      ? {}
      : { checkpointsOf: (agent: Agent) => checkpointsOf(state, agent) as AgentCheckpoints }),
    sessionOf: (agent) =>
      createAgentSession({
        sessionId: agent.sessionId,
        planModeAtStart: agent.config.policy?.planMode === true,
        store: sessionState,
        events: store.events,
        requests: store.requests,
        ttlMs: options.questionTtlMs ?? 300_000,
        now: options.now ?? Date.now,
      }),
    events: store.events,
    ...(options.mcpLimitsOf ? { mcpLimitsOf: options.mcpLimitsOf } : {}),
    ...(options.egress ? { egress: options.egress } : {}),
    ...(options.teamBoard ? { teamBoard: options.teamBoard } : {}),
    ownToolsOf: (agent) =>
      state.teams === undefined ? [] : teamToolsFor(state.teams, agent, options.children?.providers ?? []),
  });
}

/** The creator plugins' host, with `options.plugins` (which needs store.plugins); else none. */
export function pluginHostFor(state: AgentServiceState): PluginHost | undefined {
  const { options, store } = state;
  if (options.plugins === undefined) return undefined;
  if (store.plugins === undefined)
    throw new SandboxError('CONFIG_INVALID', 'createAgentService runs plugins only with store.plugins.');
  return createPluginHost(
    {
      store: store.plugins,
      agents: store.agents,
      events: store.events,
      requests: store.requests,
      liveOf: state.live.of,
    },
    options.plugins,
  );
}

export function deletionFor(state: AgentServiceState): Deletion {
  const { options, store } = state;
  return createDeletion({
    agents: store.agents,
    forget: state.lookup.forget,
    forgetAll: state.lookup.forgetAll,
    ...(store.wake ? { wake: store.wake } : {}),
    requests: store.requests,
    provider: state.provider,
    marks: state.marks,
    live: state.live,
    batches: state.batches,
    sandboxes: state.sandboxes,
    ...(state.plugins ? { plugins: state.plugins } : {}),
    graceMs: options.deleteGraceMs ?? 5000,
    reapRetryMs: options.reapRetryMs ?? 30_000,
    isClosing: state.isClosing,
    async onDeleted(id, agent) {
      try {
        await state.teams?.deleted(agent);
      } finally {
        await options.onAgentDeleted?.(id);
      }
    },
  });
}

/** Children and teams, with store.teams; else none. */
export function teamServiceFor(state: AgentServiceState): TeamService | undefined {
  const { options, store, live, batches } = state;
  if (store.teams === undefined) return undefined;
  return createTeamService({
    store: {
      agents: store.agents,
      events: store.events,
      requests: store.requests,
      teams: store.teams,
      ...(store.wake ? { wake: store.wake } : {}),
    },
    // A child asks for nothing but a teammate's team mode; create() narrows it to its parent.
    createChild: (parent, links) =>
      state.create(parent.tenantId, links.role === 'teammate' ? { teams: true } : {}, links),
    removeChild: (child) => removeAgent(state, child.tenantId, child.id),
    toolNames: async (agent) => (await (await live.of(agent)).tools.describe()).map((t) => t.name),
    interrupt: batches.interrupt,
    busy: batches.busy,
    ...(options.children?.limits ? { limits: options.children.limits } : {}),
    ...(options.children?.limitsOf ? { limitsOf: options.children.limitsOf } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
}

/** Pauses and resumes (pause.ts), and the provider's idle sweep told about the tenants' idle pauses. */
export function pausesFor(state: AgentServiceState): Pauses {
  const { options, store } = state;
  const pauses = createPauses({
    agents: store.agents,
    provider: state.provider,
    sandboxes: state.sandboxes,
    batches: state.batches,
    settings: state.settings,
    ...(options.now ? { now: options.now } : {}),
    ...(options.freeze === undefined ? {} : { freeze: options.freeze }),
  });
  pauses.pauseWhenIdle();
  return pauses;
}

/** The agent's checkpoints over the service's tracker; undefined when it keeps none. */
export function checkpointsOf(state: AgentServiceState, agent: Agent): AgentCheckpoints | undefined {
  const tracker = state.options.checkpoints;
  if (tracker === undefined) return undefined;
  const workspace = checkpointWorkspace(
    { provider: state.provider, sandboxes: state.sandboxes, agents: state.store.agents },
    agent,
  );
  return agentCheckpoints(
    tracker,
    state.store.events,
    agent,
    () => state.sandboxes.of(agent),
    workspace,
    () => state.batches.activity(agent.id).batches,
  );
}

/** The agents' workspace snapshots; on PostgreSQL a tenant's are taken in its turn across replicas (its quota's count). */
export function snapshotsFor(state: AgentServiceState): AgentSnapshots {
  const { store, provider, lookup, sandboxes } = state;
  return createAgentSnapshots({
    store: store.snapshots,
    agents: store.agents,
    provider,
    lookup,
    sandboxes,
    ...(store.tenants?.quotaTurn === undefined ? {} : { quotaTurn: store.tenants.quotaTurn }),
  });
}
