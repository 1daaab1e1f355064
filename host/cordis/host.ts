// The agent service's plugin host: the creator-plugin runtime (one isolate per running plugin,
// host/plugins) joined to the agents. It stores packages (store.plugins), starts, updates and stops
// plugins with capabilities bound to their agent (capabilities.ts), persists which should run, and
// tells clients when an agent's tool set changed (a `tools.change` event in its session log, which
// plugins also observe as `tools/change`). Invariants: every operation takes the agent it runs for
// and reads another agent's plugins as absent; a plugin's `running` flag in the store is true
// exactly while it should run after a restart (set on a successful run or update, cleared by stop,
// by a failure and by the agent's deletion); deleting an agent stops and removes its plugins.

import type { LiveAgent } from '../agents/service/live.ts';
import { toAgent } from '../agents/service/records.ts';
import type { Agent } from '../agents/types.ts';
import { SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import {
  createPluginRuntime,
  type PluginFailure,
  type PluginRuntime,
  type PluginRuntimeOptions,
  type PluginStatus,
} from '../plugins/index.ts';
import type { RequestStore } from '../requests/index.ts';
import type { AgentStore } from '../store/index.ts';
import type { DefineInput, PluginOwner, PluginStore } from '../store/plugins-core.ts';
import type { EventLog } from '../store/types.ts';
import { type AgentProviders, pluginCapabilities, type ToolOwners } from './capabilities.ts';
import { createInspector, HOST_PROVIDER_IDS } from './inspect.ts';
import { createRunningCalls } from './tool.ts';
import { type AgentPlugins, agentPlugins } from './view.ts';

/** Agents whose plugins resume() starts at once (each agent's own plugins start one by one). */
const RESUME_CONCURRENCY = 4;

export type PluginHostOptions = Omit<PluginRuntimeOptions, 'onStateChange'>;

export interface PluginHost {
  /** One agent's plugins (what the cordis_* tools and the API use). */
  of(agent: Agent): AgentPlugins;
  /**
   * Starts again every plugin whose stored state says it was running; resolves to how many started.
   * Until an agent's own plugins are back, ready(agent) is pending, so no caller sees its tool set
   * without them.
   */
  resume(onError?: (pluginId: string, error: unknown) => void): Promise<number>;
  /** Settles once the agent's plugins that resume() is starting are started (or failed). */
  ready(agentId: string): Promise<void> | undefined;
  /** Stops and removes every plugin of a deleted agent. */
  removeAgent(agent: Agent): Promise<void>;
  close(): Promise<void>;
}

export interface PluginHostDeps {
  store: PluginStore;
  agents: AgentStore;
  events: EventLog;
  requests: RequestStore;
  /** The agent's loaded tools. */
  liveOf(agent: Agent): LiveAgent;
}

const ownerOf = (agent: Agent): PluginOwner => ({ tenantId: agent.tenantId, agentId: agent.id });

export function createPluginHost(deps: PluginHostDeps, options: PluginHostOptions = {}): PluginHost {
  const { store, events } = deps;
  const calls = createRunningCalls();
  /** Plugin tool names per agent id. */
  const owners = new Map<string, ToolOwners>();
  /** Inspection providers of plugins per agent id. */
  const providers = new Map<string, AgentProviders>();
  /** The code of the last registration refused per plugin id (what its failed run reports). */
  const refusals = new Map<string, SandboxError['code']>();
  /** tools.change events not yet appended, per agent (one per tick). */
  const pending = new Map<string, { agent: Agent; added: Set<string>; removed: Set<string> }>();
  let closing = false;

  /** Made on the first start, so a service whose agents run no plugin forks no plugin worker. */
  let made: PluginRuntime | undefined;
  const runtime = (): PluginRuntime => {
    if (closing)
      throw new SandboxError('SHUTTING_DOWN', 'The service is shutting down; no plugin starts now.');
    made ??= createPluginRuntime({
      ...options,
      onStateChange(owner, status) {
        // A failed plugin is not started again by a restart; cordis_run starts it.
        if (status.state !== 'failed' || closing) return;
        try {
          store.setRunState(owner, status.pluginId, { running: false });
        } catch {
          // undefined meanwhile
        }
      },
    });
    return made;
  };
  const statusOf = (owner: PluginOwner, pluginId: string): PluginStatus | undefined =>
    made?.status(owner, pluginId);

  function changed(agent: Agent, change: { added?: string; removed?: string }): void {
    if (closing) return;
    let entry = pending.get(agent.id);
    if (entry === undefined) {
      entry = { agent, added: new Set(), removed: new Set() };
      pending.set(agent.id, entry);
      queueMicrotask(() => flushChange(agent.id));
    }
    if (change.added !== undefined) {
      entry.removed.delete(change.added);
      entry.added.add(change.added);
    }
    if (change.removed !== undefined) {
      if (!entry.added.delete(change.removed)) entry.removed.add(change.removed);
    }
  }

  function flushChange(agentId: string): void {
    const entry = pending.get(agentId);
    pending.delete(agentId);
    if (entry === undefined || closing || (entry.added.size === 0 && entry.removed.size === 0)) return;
    try {
      events.append([
        {
          sessionId: entry.agent.sessionId,
          type: 'tools.change',
          surface: 'log-only',
          data: { added: [...entry.added], removed: [...entry.removed] },
        },
      ]);
    } catch {
      // over the tenant's log budget: the set changed all the same
    }
  }

  function providersOf(agent: Agent): AgentProviders {
    let agentProviders = providers.get(agent.id);
    if (agentProviders === undefined) {
      agentProviders = new Map();
      providers.set(agent.id, agentProviders);
    }
    return agentProviders;
  }

  function capabilities(agent: Agent, pluginId: string) {
    let agentOwners = owners.get(agent.id);
    if (agentOwners === undefined) {
      agentOwners = new Map();
      owners.set(agent.id, agentOwners);
    }
    return pluginCapabilities({
      agent,
      pluginId,
      live: () => deps.liveOf(agent),
      owners: agentOwners,
      providers: providersOf(agent),
      hostProviders: HOST_PROVIDER_IDS,
      calls,
      events,
      changed: (change) => changed(agent, change),
      refused: (code) => refusals.set(pluginId, code),
    });
  }

  /** Starts (or updates to) a stored package; records the outcome in the store. */
  async function launch(
    agent: Agent,
    pluginId: string,
    packageId: string,
    mode: 'run' | 'update',
  ): Promise<{ status: PluginStatus; error?: PluginFailure; code?: SandboxError['code'] }> {
    const owner = ownerOf(agent);
    const pkg = store.getPackage(owner, pluginId, packageId);
    if (pkg === undefined)
      throw new SandboxError('NOT_FOUND', `Plugin ${pluginId} has no package ${packageId}.`, {
        data: { pluginId, packageId },
      });
    if (pkg.code.host === undefined)
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `Package ${packageId} has no host body; only the client runs it (fetch it over the API).`,
      );
    const known = statusOf(owner, pluginId);
    const state = known?.state;
    const live = state === 'running' || state === 'starting';
    if (mode === 'run' && live)
      throw new SandboxError('CONFLICT', `Plugin ${pluginId} is already ${state}; use mode "update".`);
    refusals.delete(pluginId);
    const source = { packageId, source: pkg.code.host };
    const result =
      known !== undefined
        ? await runtime().update(owner, pluginId, source)
        : await runtime().start({ owner, pluginId, ...source, capabilities: capabilities(agent, pluginId) });
    const running = result.status.state === 'running';
    store.setRunState(owner, pluginId, {
      running,
      ...(running ? { currentPackageId: result.status.packageId as string } : {}),
    });
    if (result.ok) return { status: result.status };
    // A refused registration's code, else that of a refusal to place it (a cap of the tenant's).
    const code = refusals.get(pluginId) ?? result.error.code;
    return { status: result.status, error: result.error, ...(code ? { code } : {}) };
  }

  async function stop(agent: Agent, pluginId: string): Promise<PluginStatus | undefined> {
    const owner = ownerOf(agent);
    const status = made?.status(owner, pluginId) === undefined ? undefined : await made.stop(owner, pluginId);
    store.setRunState(owner, pluginId, { running: false });
    return status;
  }

  function undefine(agent: Agent, pluginId: string): boolean {
    const owner = ownerOf(agent);
    const state = statusOf(owner, pluginId)?.state;
    if (state === 'running' || state === 'starting')
      throw new SandboxError(
        'CONFLICT',
        `Plugin ${pluginId} is ${state}; stop it first (cordis_stop), then undefine it.`,
      );
    made?.forget(owner, pluginId);
    refusals.delete(pluginId);
    return store.undefine(owner, pluginId);
  }

  /** Per agent id, settled when resume() has started its plugins. */
  const resuming = new Map<string, Promise<void>>();

  async function resume(onError?: (pluginId: string, error: unknown) => void): Promise<number> {
    const byAgent = new Map<string, ReturnType<PluginStore['listRunning']>>();
    for (const record of store.listRunning()) {
      const list = byAgent.get(record.agentId) ?? [];
      list.push(record);
      byAgent.set(record.agentId, list);
    }
    let started = 0;
    async function resumeAgent(records: ReturnType<PluginStore['listRunning']>): Promise<void> {
      for (const record of records) {
        const owner = { tenantId: record.tenantId, agentId: record.agentId };
        try {
          const agentRecord = deps.agents.get(record.tenantId, record.agentId);
          if (agentRecord === undefined || record.currentPackageId === undefined) {
            store.setRunState(owner, record.id, { running: false });
            continue;
          }
          const outcome = await launch(toAgent(agentRecord), record.id, record.currentPackageId, 'run');
          if (outcome.error === undefined) started++;
          else onError?.(record.id, new SandboxError('TOOL_FAILED', outcome.error.message));
        } catch (error) {
          onError?.(record.id, error);
        }
      }
    }
    // Every agent's wait starts now; agents resume a few at a time, each one's plugins in order.
    const queue = [...byAgent.entries()].map(([agentId, records]) => {
      let settle = () => {};
      const done = new Promise<void>((resolve) => {
        settle = resolve;
      });
      resuming.set(agentId, done);
      return { agentId, records, settle };
    });
    const worker = async () => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
        await resumeAgent(next.records);
        resuming.delete(next.agentId);
        next.settle();
      }
    };
    await Promise.all(Array.from({ length: RESUME_CONCURRENCY }, worker));
    return started;
  }

  async function removeAgent(agent: Agent): Promise<void> {
    const owner = ownerOf(agent);
    for (const plugin of store.listPlugins(owner)) {
      if (made?.status(owner, plugin.id) !== undefined) {
        await made.stop(owner, plugin.id);
        made.forget(owner, plugin.id);
      }
      refusals.delete(plugin.id);
      store.undefine(owner, plugin.id);
    }
    owners.delete(agent.id);
    providers.delete(agent.id);
  }

  function of(agent: Agent): AgentPlugins {
    const plugins: AgentPlugins = agentPlugins({
      agent,
      owner: ownerOf(agent),
      store,
      status: (pluginId) => statusOf(ownerOf(agent), pluginId),
      inspect: createInspector({
        agent,
        events,
        requests: deps.requests,
        tools: () => deps.liveOf(agent).tools.describe(),
        plugins: () => plugins.list() as unknown as JsonValue,
        plugin: (pluginId) => plugins.get(pluginId) as unknown as JsonValue,
        provided: () => [...(providers.get(agent.id)?.values() ?? [])],
      }),
      define: (input: DefineInput) => store.define(ownerOf(agent), input),
      launch: (pluginId, packageId, mode) => launch(agent, pluginId, packageId, mode),
      stop: (pluginId) => stop(agent, pluginId),
      undefine: (pluginId) => undefine(agent, pluginId),
    });
    return plugins;
  }

  return {
    of,
    resume,
    ready: (agentId) => resuming.get(agentId),
    removeAgent,
    async close() {
      closing = true;
      await made?.close();
    },
  };
}
