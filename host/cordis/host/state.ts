// The agent service's plugin host state: the runtime (made on the first start), per agent the
// plugin tool names and inspection providers, the last refused registration per plugin and the
// tools.change events not yet appended. The other parts (launch.ts, resume.ts) are functions over it.
// Invariants: a plugin's `running` flag in the store is cleared when it fails (`onStateChange`),
// unless the host is closing; an agent's tool-set changes go out as one `tools.change` event per
// tick in its session log.
import type { LiveAgent } from '../../agents/service/live.ts';
import type { Agent } from '../../agents/types.ts';
import { SandboxError } from '../../errors.ts';
import {
  createPluginRuntime,
  type PluginRuntime,
  type PluginRuntimeOptions,
  type PluginStatus,
} from '../../plugins/index.ts';
import type { RequestStore } from '../../requests/index.ts';
import type { AgentStore } from '../../store/index.ts';
import type { PluginOwner, PluginStore } from '../../store/plugins-core.ts';
import type { EventLog } from '../../store/types.ts';
import { type AgentProviders, pluginCapabilities, type ToolOwners } from '../capabilities.ts';
import { HOST_PROVIDER_IDS } from '../inspect.ts';
import { createRunningCalls } from '../tool.ts';

export type PluginHostOptions = Omit<PluginRuntimeOptions, 'onStateChange'>;

export interface PluginHostDeps {
  store: PluginStore;
  agents: AgentStore;
  events: EventLog;
  requests: RequestStore;
  /** The agent's loaded tools (loading them on first use). */
  liveOf(agent: Agent): Promise<LiveAgent>;
}

export interface HostState {
  readonly deps: PluginHostDeps;
  readonly options: PluginHostOptions;
  readonly calls: ReturnType<typeof createRunningCalls>;
  /** Plugin tool names per agent id. */
  readonly owners: Map<string, ToolOwners>;
  /** Inspection providers of plugins per agent id. */
  readonly providers: Map<string, AgentProviders>;
  /** The code of the last registration refused per plugin id (what its failed run reports). */
  readonly refusals: Map<string, SandboxError['code']>;
  /** tools.change events not yet appended, per agent (one per tick). */
  readonly pending: Map<string, { agent: Agent; added: Set<string>; removed: Set<string> }>;
  /** Per agent id, settled when resume() has started its plugins. */
  readonly resuming: Map<string, Promise<void>>;
  /**
   * Set by resume() before its first await, settled once `resuming` holds every agent it will
   * start plugins of: the store's list of running plugins is a round trip on some backends.
   */
  listing: Promise<void> | undefined;
  closing: boolean;
  /** Made on the first start, so a service whose agents run no plugin forks no plugin worker. */
  made: PluginRuntime | undefined;
}

export function createHostState(deps: PluginHostDeps, options: PluginHostOptions): HostState {
  return {
    deps,
    options,
    calls: createRunningCalls(),
    owners: new Map(),
    providers: new Map(),
    refusals: new Map(),
    pending: new Map(),
    resuming: new Map(),
    listing: undefined,
    closing: false,
    made: undefined,
  };
}

export const ownerOf = (agent: Agent): PluginOwner => ({ tenantId: agent.tenantId, agentId: agent.id });

export function runtime(state: HostState): PluginRuntime {
  if (state.closing)
    throw new SandboxError('SHUTTING_DOWN', 'The service is shutting down; no plugin starts now.');
  const { store } = state.deps;
  state.made ??= createPluginRuntime({
    ...state.options,
    onStateChange(owner, status) {
      // A failed plugin is not started again by a restart; cordis_run starts it.
      if (status.state !== 'failed' || state.closing) return;
      store.setRunState(owner, status.pluginId, { running: false }).catch(() => {
        // undefined meanwhile
      });
    },
  });
  return state.made;
}

export const statusOf = (state: HostState, owner: PluginOwner, pluginId: string): PluginStatus | undefined =>
  state.made?.status(owner, pluginId);

function changed(state: HostState, agent: Agent, change: { added?: string; removed?: string }): void {
  if (state.closing) return;
  const { pending } = state;
  let entry = pending.get(agent.id);
  if (entry === undefined) {
    entry = { agent, added: new Set(), removed: new Set() };
    pending.set(agent.id, entry);
    queueMicrotask(() => flushChange(state, agent.id));
  }
  if (change.added !== undefined) {
    entry.removed.delete(change.added);
    entry.added.add(change.added);
  }
  if (change.removed !== undefined) {
    if (!entry.added.delete(change.removed)) entry.removed.add(change.removed);
  }
}

function flushChange(state: HostState, agentId: string): void {
  const { pending } = state;
  const entry = pending.get(agentId);
  pending.delete(agentId);
  if (entry === undefined || state.closing || (entry.added.size === 0 && entry.removed.size === 0)) return;
  state.deps.events
    .append([
      {
        sessionId: entry.agent.sessionId,
        type: 'tools.change',
        surface: 'log-only',
        data: { added: [...entry.added], removed: [...entry.removed] },
      },
    ])
    .catch(() => {
      // over the tenant's log budget: the set changed all the same
    });
}

export function providersOf(state: HostState, agent: Agent): AgentProviders {
  let agentProviders = state.providers.get(agent.id);
  if (agentProviders === undefined) {
    agentProviders = new Map();
    state.providers.set(agent.id, agentProviders);
  }
  return agentProviders;
}

/** A plugin's capabilities over the agent's tools, loaded before it starts (`live`). */
export function capabilities(state: HostState, agent: Agent, pluginId: string, live: LiveAgent) {
  let agentOwners = state.owners.get(agent.id);
  if (agentOwners === undefined) {
    agentOwners = new Map();
    state.owners.set(agent.id, agentOwners);
  }
  return pluginCapabilities({
    agent,
    pluginId,
    live: () => live,
    owners: agentOwners,
    providers: providersOf(state, agent),
    hostProviders: HOST_PROVIDER_IDS,
    calls: state.calls,
    events: state.deps.events,
    changed: (change) => changed(state, agent, change),
    refused: (code) => state.refusals.set(pluginId, code),
  });
}
