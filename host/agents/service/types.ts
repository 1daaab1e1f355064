// The agent service's shapes (service.ts re-exports them): its options and what it offers.

import type { PluginHostOptions } from '../../cordis/host.ts';
import type { AgentPlugins } from '../../cordis/view.ts';
import type { EgressGateway } from '../../egress/index.ts';
import type { McpLimits } from '../../mcp-servers/types.ts';
import type { PauseMode, Sandbox, SandboxProvider } from '../../sandbox/types.ts';
import type { ConversationMessage } from '../../session/messages.ts';
import type { AgentSession } from '../../session/state.ts';
import type { Store } from '../../store/index.ts';
import type { SessionEvent } from '../../store/types.ts';
import type { TeamBoard } from '../../teams/board/board.ts';
import type { ChildLimits } from '../../teams/limits.ts';
import type { TeamService } from '../../teams/service.ts';
import type { ToolRegistry } from '../../tools/index.ts';
import type { ToolCall, ToolResult } from '../../tools/types.ts';
import type { SpawnProvider } from '../../tools/workflow/index.ts';
import type { AgentCheckpoints } from '../checkpoints/agent.ts';
import type { CheckpointTracker } from '../checkpoints/tracker.ts';
import type { RuntimeAccess } from '../sandbox-runtime.ts';
import type { TenantSettingsReader } from '../tenant-settings.ts';
import type {
  Agent,
  CallOptions,
  CreateAgentRequest,
  RemoteToolSpec,
  StepView,
  ToolRuntime,
  ToolSurface,
} from '../types.ts';
import type { FreezeBoundOptions } from './freeze-bound.ts';
import type { McpServerService } from './mcp.ts';
import type { PauseView } from './pause.ts';
import type { AgentSnapshots } from './snapshots.ts';
import type { AgentUsage } from './usage.ts';

export interface AgentServiceOptions {
  /** Without `sessionState`, todos, goals and plan mode live in memory only (unit tests). */
  store: Pick<Store, 'agents' | 'events' | 'requests'> &
    Partial<
      Pick<Store, 'plugins' | 'sessionState' | 'teams' | 'wake' | 'tenantSettings' | 'snapshots' | 'tenants'>
    >;
  /**
   * Runs creator plugins (the cordis_* tools' plugin host) with these runtime options; needs
   * `store.plugins`. Default: none, so no agent gets plugins.
   */
  plugins?: PluginHostOptions;
  /** The tool registry (global layer holds the installed tools); adapted by createRegistryRuntime. */
  registry?: ToolRegistry;
  /** Overrides the registry adapter (tests, other runtimes). One of registry or runtime is required. */
  runtime?: ToolRuntime;
  sandboxes: SandboxProvider;
  /** Told about every settled root result (metrics); `remote` marks client-defined tool names. */
  observe?: (result: ToolResult, remote: boolean) => void;
  /**
   * Runs the subagents of agents created with `subagents: true` (workflow agent() steps).
   * Default: a `subagent` host request the client answers.
   */
  spawn?: SpawnProvider;
  now?: () => number;
  /** How long the client has to answer ask_user_question and review an exit_plan_mode plan. Default 300000 ms. */
  questionTtlMs?: number;
  /**
   * How long delete() waits for the agent's aborted batches to settle before it destroys the
   * sandbox anyway (a body that ignores its signal loses the sandbox under it). Default 5000 ms.
   */
  deleteGraceMs?: number;
  /**
   * After a delete whose sandbox removal failed (an engine error), reapDeleted() runs again this
   * much later, so the sandbox does not wait for the next start. Default 30000 ms.
   */
  reapRetryMs?: number;
  /**
   * Told the id of every agent deleted, once it is marked deleted (its schedules go with it); the
   * delete resolves after what it returns.
   */
  onAgentDeleted?: (agentId: string) => void | Promise<void>;
  /** Each tenant's bounds on its agents' MCP servers, over DEFAULT_MCP_LIMITS. */
  mcpLimitsOf?: (tenantId: string) => Partial<McpLimits> | undefined;
  /** The egress gateway: remote (HTTP) MCP servers are reached only through it; without it they are refused. */
  egress?: EgressGateway;
  /** The team task boards (agents created with `teams: true`); default none. */
  teamBoard?: TeamBoard;
  /**
   * Child agents and teams (needs `store.teams`): the service's limits over DEFAULT_CHILD_LIMITS,
   * each tenant's own maxima, and the product-provider bundles that get `subagent_<name>` aliases.
   */
  children?: {
    limits?: Partial<ChildLimits>;
    limitsOf?: (tenantId: string) => Partial<ChildLimits> | undefined;
    providers?: readonly string[];
    /**
     * Whether the child runs a previous process left pending are watched at start. Default true.
     * Replicas pass false: each family's runs are resumed by the replica that takes it over
     * (teams().resume(agentIds)), since settling one writes to the parent's session.
     */
    resumeAtStart?: boolean;
  };
  /**
   * Told once delete() removed an agent (and its descendants) whole: with replicas, the end of a
   * top-level agent's family (its lease is let go). A failure is the caller's to report.
   */
  onRemoved?: (tenantId: string, agentId: string) => Promise<void>;
  /** The sandbox runtimes each tenant may ask for besides runc (../sandbox-runtime.ts). Default: none. */
  runtimes?: RuntimeAccess;
  /** Keeps checkpoints of the agents' file calls (../checkpoints/); default none: nothing tracked, no rollback. */
  checkpoints?: CheckpointTracker;
  /**
   * Before a child or teammate with a workspace of its own (`childWorkspace: "isolated"`) is made:
   * refuses it (LIMIT_EXCEEDED) where its workspace (`diskMb`, undefined: the default) would take
   * its tenant past its disk quota (host/api/quotas.ts), else runs `make` (the child's store
   * write), the check and the write in one turn of the tenant's creates. Default: none.
   */
  admitWorkspace?: <T>(tenantId: string, diskMb: number | undefined, make: () => Promise<T>) => Promise<T>;
  /**
   * The operator's bound on a frozen pause (DSH_FREEZE_MAX_SECONDS, in ms; 0: none): an agent
   * frozen longer is stopped (service/freeze-bound.ts); with replicas `mayStop` says which agents
   * this one runs. Default: none.
   */
  freeze?: Pick<FreezeBoundOptions, 'maxMs' | 'mayStop' | 'onError'>;
}

export interface AgentService {
  create(tenantId: string, input: CreateAgentRequest): Promise<Agent>;
  /** Rejects with NOT_FOUND for unknown, deleted or another tenant's agents. */
  get(tenantId: string, id: string): Promise<Agent>;
  list(tenantId: string): Promise<Agent[]>;
  /**
   * Marks the agent deleted, then stops everything it started (batches, programs, workflows, host
   * requests, terminal sockets through onDeleted) and destroys its sandbox; resolves when done.
   */
  delete(tenantId: string, id: string): Promise<void>;
  /** Runs `listener` once when the agent is deleted; returns the unsubscriber. */
  onDeleted(agent: Agent, listener: () => void): () => void;
  tools(agent: Agent): Promise<ToolSurface>;
  /** Opens a step: the tools the model sees, resolved once, that calls naming the step run against. */
  step(agent: Agent): Promise<StepView>;
  /** The agent's todos, goal and plan mode (the state its session tools keep). */
  session(agent: Agent): Promise<AgentSession>;
  call(agent: Agent, calls: ToolCall[], options: CallOptions): Promise<ToolResult[]>;
  /** The agent's sandbox, created on first use (or re-adopted after a restart). */
  sandbox(agent: Agent): Promise<Sandbox>;
  /** The agent's creator plugins; NOT_FOUND when the service runs none. */
  plugins(agent: Agent): Promise<AgentPlugins>;
  /** Starts the plugins that were running when the service last stopped; resolves to how many. */
  resumePlugins(
    onError?: (pluginId: string, error: unknown) => void,
    agentIds?: ReadonlySet<string>,
  ): Promise<number>;
  /**
   * Replicas: stops this process's work for the agents (their family is run by another replica
   * now): their tool scopes fail closed and are forgotten, their batches aborted, their sandboxes
   * detached (they keep running), their plugins stopped here with their stored state kept. The
   * next use, should the family come back, loads them afresh.
   */
  release(tenantId: string, agentIds: readonly string[]): Promise<void>;
  /** Appends the client's conversation messages to the agent's session log; resolves to their events. */
  appendMessages(agent: Agent, messages: readonly ConversationMessage[]): Promise<SessionEvent[]>;
  /** The agent's children, teams and mailboxes; NOT_FOUND when the service keeps none (no store.teams). */
  teams(): TeamService;
  /** Adds or replaces client-executed tools; returns every remote tool name of the agent. */
  registerRemoteTools(agent: Agent, tools: RemoteToolSpec[]): Promise<string[]>;
  /** The agent's MCP servers: registered, listed, removed (tool sources run in its sandbox). */
  readonly mcpServers: McpServerService;
  /** State and usage of agents and their workspaces, as this process knows them (service/usage.ts). */
  readonly usage: AgentUsage;
  /**
   * Pauses the agent (service/pause.ts): its sandbox stopped (or frozen), its workspace kept;
   * NOT_FOUND for another tenant's agent, AGENT_BUSY while a call runs; a paused agent stays as it is.
   */
  pause(tenantId: string, id: string, mode: PauseMode): Promise<PauseView>;
  /** Starts a paused agent's sandbox again and clears its pause; a running agent stays as it is. */
  resume(tenantId: string, id: string): Promise<PauseView>;
  /** Each tenant's settings (pauses, checkpoint bounds), read through a short cache. */
  readonly settings: TenantSettingsReader;
  /** The agent's checkpoints (list, rollback, uploads' tracking); undefined when the service keeps none. */
  checkpoints(agent: Agent): AgentCheckpoints | undefined;
  /** Bytes the tenant's agents' checkpoints hold here (its `checkpointBytes` quota's usage); undefined when the service keeps none. */
  checkpointBytes(tenantId: string): Promise<number | undefined>;
  /** Workspace snapshots of the tenant's agents (service/snapshots.ts). */
  readonly snapshots: AgentSnapshots;
  /** Sandboxes this process holds a handle to. */
  liveSandboxes(): number;
  inFlight(): number;
  /**
   * Removes the sandboxes of deleted agents whose delete did not get to finish (a crash or an engine
   * error between marking the agent deleted and removing its container); run once at start.
   * Resolves to the number removed; failures go to `onError` and are tried again at the next start.
   */
  reapDeleted(onError?: (agentId: string, error: unknown) => void): Promise<number>;
  /** Lets in-flight batches finish for `graceMs`, then aborts them (SHUTTING_DOWN); leaves sandboxes running. */
  close(graceMs?: number): Promise<void>;
}
