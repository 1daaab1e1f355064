// The agent service's plugin host: the creator-plugin runtime (one isolate per running plugin,
// host/plugins) joined to the agents. It stores packages (store.plugins), starts, updates and stops
// plugins with capabilities bound to their agent (capabilities.ts), persists which should run, and
// tells clients when an agent's tool set changed (a `tools.change` event in its session log, which
// plugins also observe as `tools/change`). This module wires the parts, each in its own module
// under host/: state.ts holds the runtime, the per-agent tools and providers and the pending
// tool-set changes; launch.ts starts, updates, stops, undefines and removes plugins (with the
// store's `running` flag and its invariants); resume.ts starts again what ran before a restart.
// Invariants: every operation takes the agent it runs for and reads another agent's plugins as
// absent; a plugin defined or started while its agent was deleted does not outlive it (afterWrite).

import type { Agent } from '../agents/types.ts';
import { SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import type { DefineInput } from '../store/plugins-core.ts';
import { launch, releaseAgent, removeAgent, stop, undefine } from './host/launch.ts';
import { resume } from './host/resume.ts';
import {
  createHostState,
  type HostState,
  ownerOf,
  type PluginHostDeps,
  type PluginHostOptions,
  statusOf,
} from './host/state.ts';
import { createInspector } from './inspect.ts';
import { type AgentPlugins, agentPlugins } from './view.ts';

export type { PluginHostDeps, PluginHostOptions } from './host/state.ts';

export interface PluginHost {
  /** One agent's plugins (what the cordis_* tools and the API use). */
  of(agent: Agent): AgentPlugins;
  /**
   * Starts again every plugin whose stored state says it was running; resolves to how many started.
   * Until an agent's own plugins are back, ready(agent) is pending, so no caller sees its tool set
   * without them.
   */
  resume(
    onError?: (pluginId: string, error: unknown) => void,
    agentIds?: ReadonlySet<string>,
  ): Promise<number>;
  /** Settles once the agent's plugins that resume() is starting are started (or failed). */
  ready(agentId: string): Promise<void> | undefined;
  /** Stops and removes every plugin of a deleted agent. */
  removeAgent(agent: Agent): Promise<void>;
  /**
   * Replicas: stops the agent's plugins in this process and forgets them, their stored state kept
   * (the replica that took the agent's family over resumes them).
   */
  releaseAgent(tenantId: string, agentId: string): Promise<void>;
  close(): Promise<void>;
}

export function createPluginHost(deps: PluginHostDeps, options: PluginHostOptions = {}): PluginHost {
  const state = createHostState(deps, options);
  return {
    of: (agent) => of(state, agent),
    resume: (onError, agentIds) => resume(state, onError, agentIds),
    ready: (agentId) =>
      state.listing === undefined
        ? state.resuming.get(agentId)
        : state.listing.then(() => state.resuming.get(agentId)),
    removeAgent: (agent) => removeAgent(state, agent),
    releaseAgent: (tenantId, agentId) => releaseAgent(state, tenantId, agentId),
    async close() {
      state.closing = true;
      await state.made?.close();
    },
  };
}

function of(state: HostState, agent: Agent): AgentPlugins {
  const { deps } = state;
  const plugins: AgentPlugins = agentPlugins({
    agent,
    owner: ownerOf(agent),
    store: deps.store,
    status: (pluginId) => statusOf(state, ownerOf(agent), pluginId),
    inspect: createInspector({
      agent,
      events: deps.events,
      requests: deps.requests,
      tools: async () => (await deps.liveOf(agent)).tools.describe(),
      plugins: async () => (await plugins.list()) as unknown as JsonValue,
      plugin: async (pluginId) => (await plugins.get(pluginId)) as unknown as JsonValue,
      provided: () => [...(state.providers.get(agent.id)?.values() ?? [])],
    }),
    define: async (input: DefineInput) =>
      afterWrite(state, agent, await deps.store.define(ownerOf(agent), input)),
    launch: async (pluginId, packageId, mode) =>
      afterWrite(state, agent, await launch(state, agent, pluginId, packageId, mode)),
    stop: (pluginId) => stop(state, agent, pluginId),
    undefine: (pluginId) => undefine(state, agent, pluginId),
  });
  return plugins;
}

/**
 * The agent deleted while a plugin of it was being stored or started: its deletion may have
 * removed its plugins before that write. Read after the write, so whichever comes second sees the
 * other; what came late is stopped and removed as the deletion does.
 */
async function afterWrite<T>(state: HostState, agent: Agent, result: T): Promise<T> {
  if ((await state.deps.agents.get(agent.tenantId, agent.id)) !== undefined) return result;
  await removeAgent(state, agent);
  throw new SandboxError('NOT_FOUND', `Agent ${agent.id} was deleted.`, { data: { agentId: agent.id } });
}
