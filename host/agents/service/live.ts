// Loading and rehydration: an agent's tool scope (preset, restrictions, policy, remote tools, and
// the services its tools get) built from its stored record on first use in this process, and kept
// until the agent is deleted or the service closes. A restart therefore loses nothing: the record
// holds everything, the sandbox is re-adopted by agent id when a tool first asks for it.
// Invariants: an agent that is gone never gets a scope; a retired scope fails closed (runtime.ts:
// every call still made through it, inner ones included, is DENIED); the record and session state
// are awaited first and the scope is then built synchronously from them, once per agent even when
// calls race to load it; a load the agent's retirement overtook is thrown away, never kept.

import { agentPolicies } from '../../../policies/index.ts';
import type { AgentPlugins } from '../../cordis/view.ts';
import type { EgressGateway } from '../../egress/index.ts';
import { remoteFetchFor } from '../../mcp-servers/remote-fetch.ts';
import { type AgentMcp, installMcpServers } from '../../mcp-servers/servers.ts';
import type { McpLimits } from '../../mcp-servers/types.ts';
import type { Sandbox } from '../../sandbox/types.ts';
import type { AgentSession } from '../../session/state.ts';
import type { AgentRecord, AgentStore } from '../../store/index.ts';
import type { EventLog } from '../../store/types.ts';
import type { TeamBoard } from '../../teams/board/board.ts';
import type { AgentScope, ToolDefinition } from '../../tools/types.ts';
import type { SpawnProvider } from '../../tools/workflow/index.ts';
import type { AgentCheckpoints } from '../checkpoints/agent.ts';
import type { Agent, AgentTools, RemoteToolSpec, ToolRuntime } from '../types.ts';
import { mcpLimitsFor, mcpPersister, mcpServersOf } from './mcp.ts';
import { type DeletionMarks, deletedError, remoteToolsOf } from './records.ts';
import { type DefineRemote, installRemoteTools, type RemoteTools } from './remote.ts';

export interface LiveAgent {
  scope: AgentScope;
  tools: AgentTools;
  remote: RemoteTools;
  /** Its todos, goal, plan mode and questions (the session tools' `services.session`). */
  session: AgentSession;
  /** Its MCP servers (tool sources run in its sandbox). */
  mcp: AgentMcp;
}

export interface LiveAgents {
  /** The agent's loaded tools (its record read on first use); NOT_FOUND once it is gone. */
  of(agent: Agent): Promise<LiveAgent>;
  /** Forgets the agent's tools and makes them fail closed. */
  retire(id: string): void;
  retireAll(): void;
}

export interface LiveAgentsOptions {
  agents: AgentStore;
  runtime: ToolRuntime;
  marks: DeletionMarks;
  defineRemote: DefineRemote;
  /** The agent's sandbox, as its tools get it (`services.sandbox`, called when one needs it). */
  sandboxOf: (agent: Agent) => Promise<Sandbox>;
  /** Runs workflow subagents, for agents created with `subagents: true`. */
  spawn: SpawnProvider;
  /** The agent's creator plugins (`services.plugins`); undefined when the service runs none. */
  pluginsOf?: (agent: Agent) => AgentPlugins | undefined;
  /** The agent's checkpoints (`services.checkpoints`); absent when the service keeps none. */
  checkpointsOf?: (agent: Agent) => AgentCheckpoints;
  /** The agent's session service (its stored state read first), made once per load. */
  sessionOf: (agent: Agent) => Promise<AgentSession>;
  /** Persists and logs MCP server changes; told nothing else. */
  events: EventLog;
  /** Each tenant's MCP bounds over DEFAULT_MCP_LIMITS. */
  mcpLimitsOf?: (tenantId: string) => Partial<McpLimits> | undefined;
  /** Reaches the agents' remote MCP servers; without it they do not start. */
  egress?: EgressGateway;
  /** The team task boards: `teams: true` agents get theirs, every agent's writes obey what it holds. */
  teamBoard?: TeamBoard;
  /**
   * Tools of the agent's own layer besides its remote tools (the child-control and team tools its
   * config selects: host/teams/tools.ts); a remote tool of the same name wins.
   */
  ownToolsOf?: (agent: Agent) => ToolDefinition[];
}

/** The agent's scope: its id, session and the services its tools get. */
function scopeOf(options: LiveAgentsOptions, agent: Agent, session: AgentSession): AgentScope {
  const plugins = options.pluginsOf?.(agent);
  return {
    id: agent.id,
    sessionId: agent.sessionId,
    services: {
      tenantId: agent.tenantId,
      // Fixed at creation: the global tools' conditions read it here (host/agents/configs.ts).
      agentConfig: agent.config,
      sandbox: () => options.sandboxOf(agent),
      session,
      // Only an agent whose client runs subagents can spawn them (and so sees workflow and ralph).
      ...(agent.config.subagents === true ? { spawn: options.spawn } : {}),
      // Only with a plugin host does the agent see cordis_* (and only its preset's list admits them).
      ...(plugins === undefined ? {} : { plugins }),
      ...(options.checkpointsOf === undefined ? {} : { checkpoints: options.checkpointsOf(agent) }),
      ...teamServicesOf(options, agent),
    },
  };
}

/**
 * Every agent's writes obey the scopes of the tasks it holds (a task may be reassigned to any
 * teammate), its write grant and its ancestors' (a child has no board of its own); only
 * `teams: true` agents see the board tools.
 */
function teamServicesOf(options: LiveAgentsOptions, agent: Agent): Record<string, unknown> {
  const board = options.teamBoard;
  if (board === undefined) return {};
  return {
    writeScopes: () => board.writeBounds(agent.tenantId, agent.id),
    ...(agent.config.teams === true ? { teamBoard: board.forAgent(agent.tenantId, agent.id) } : {}),
  };
}

export function createLiveAgents(options: LiveAgentsOptions): LiveAgents {
  const { agents, runtime, marks } = options;
  const live = new Map<string, LiveAgent>();
  /** Loads under way, so racing first calls share one; retire() drops an entry to void its load. */
  const loading = new Map<string, Promise<LiveAgent>>();

  async function of(agent: Agent): Promise<LiveAgent> {
    if (marks.deleting.has(agent.id)) throw deletedError(agent.id);
    const existing = live.get(agent.id);
    if (existing !== undefined) return existing;
    const pending = loading.get(agent.id);
    if (pending !== undefined) return pending;
    const started: Promise<LiveAgent> = loadStored(agent, () => loading.get(agent.id) === started);
    loading.set(agent.id, started);
    const settle = () => {
      if (loading.get(agent.id) === started) loading.delete(agent.id);
    };
    started.then(settle, settle);
    return started;
  }

  /** Reads the record and session state, then builds the agent's tools synchronously from them. */
  async function loadStored(agent: Agent, stillWanted: () => boolean): Promise<LiveAgent> {
    const record = await agents.get(agent.tenantId, agent.id);
    if (record === undefined) throw deletedError(agent.id);
    const session = await options.sessionOf(agent);
    // Deleted or retired during the awaits: this load is void.
    if (marks.deleting.has(agent.id) || !stillWanted()) throw deletedError(agent.id);
    const loaded = load(agent, remoteToolsOf(record), record, session);
    live.set(agent.id, loaded);
    return loaded;
  }

  function load(
    agent: Agent,
    remoteSpecs: RemoteToolSpec[],
    record: AgentRecord,
    session: AgentSession,
  ): LiveAgent {
    const scope = scopeOf(options, agent, session);
    const tools = runtime.forAgent({
      agent: scope,
      preset: agent.preset,
      mode: agent.mode,
      own: [],
      ...(agent.config.restrict ? { restrict: agent.config.restrict } : {}),
      policies: agentPolicies(agent.config.policy),
    });
    try {
      const remote = installRemoteTools(tools, remoteSpecs, options.defineRemote);
      const limits = mcpLimitsFor(options.mcpLimitsOf, agent.tenantId);
      const mcp = installMcpServers(
        {
          tools,
          limits,
          ...(options.egress === undefined
            ? {}
            : {
                remoteFetch: remoteFetchFor(
                  options.egress,
                  { tenantId: agent.tenantId, agentId: agent.id, sessionId: agent.sessionId, via: 'mcp' },
                  4 * limits.maxResultBytes,
                ),
              }),
          sandbox: () => options.sandboxOf(agent),
          persist: mcpPersister(agents, options.events, agent),
        },
        mcpServersOf(record),
      );
      for (const definition of options.ownToolsOf?.(agent) ?? [])
        if (!remote.has(definition.name)) tools.register(definition);
      return { scope, tools, session, remote, mcp };
    } catch (error) {
      tools.dispose();
      throw error;
    }
  }

  function retire(id: string): void {
    const state = live.get(id);
    live.delete(id);
    loading.delete(id);
    state?.mcp.stopAll();
    state?.tools.dispose();
  }

  function retireAll(): void {
    for (const state of live.values()) {
      state.mcp.stopAll();
      state.tools.dispose();
    }
    live.clear();
    loading.clear();
  }

  return { of, retire, retireAll };
}
