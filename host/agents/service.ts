// The agent service: create/get/list/delete agents per tenant, what each agent's model sees, and
// its call batches through the one pipeline. This module wires the parts in ./service/, one
// concern each: records (store rows as Agents, which agents are gone), create (creation and its
// checks), live (loading an agent's tool scope from its record, cached per process), remote (its
// remote tools, kept in the agents table), sandbox (lazy sandbox binding), batches (calls, their
// aborts and the shutdown grace) and deletion (delete, reaping, deletion listeners).
// A restart loses nothing: agents and their remote tools live in store.agents (registrations are
// also logged, `agent.remote_tools`), sandboxes in the provider (re-adopted by agent id).
// Sandboxes are created lazily, when the first tool or file transfer needs one, so creating an
// agent is a cheap store write and agents that only use remote tools never hold a container.
// With `plugins`, the agent's creator plugins (./plugins/host.ts) run beside it: their tools join
// its scope, deleting the agent removes them, and resumePlugins() starts those that were running.
// With `store.teams`, agents created with `subagents` or `teams` make children and teammates:
// agents of their own, linked to their parent (./teams/). Deleting an agent deletes its
// descendants with it, each marked deleted before anything is awaited (fail closed: no child
// outlives its parent, none keeps working in a workspace about to be destroyed).
// Invariants: another tenant's agent reads as NOT_FOUND; results come back in call order; once
// delete() has marked an agent deleted nothing runs for it any more (service/deletion.ts).

import { createPluginHost, type PluginHost, type PluginHostOptions } from '../cordis/host.ts';
import type { AgentPlugins } from '../cordis/view.ts';
import type { EgressGateway } from '../egress/index.ts';
import { SandboxError } from '../errors.ts';
import type { McpLimits } from '../mcp-servers/types.ts';
import type { Sandbox, SandboxProvider } from '../sandbox/types.ts';
import { type ConversationMessage, messageEvents } from '../session/messages.ts';
import { type AgentSession, createAgentSession } from '../session/state.ts';
import { createMemorySessionStateStore, type Store } from '../store/index.ts';
import type { SessionEvent } from '../store/types.ts';
import type { TeamBoard } from '../teams/board/board.ts';
import type { ChildLimits } from '../teams/limits.ts';
import { createTeamService, type TeamService } from '../teams/service.ts';
import { teamToolsFor } from '../teams/tools.ts';
import type { ToolRegistry } from '../tools/index.ts';
import type { ToolCall, ToolResult } from '../tools/types.ts';
import { createRequestSpawner, type SpawnProvider } from '../tools/workflow/index.ts';
import { createRegistryRuntime } from './runtime.ts';
import { createBatches } from './service/batches.ts';
import { createAgentCreation } from './service/create.ts';
import { createDeletion } from './service/deletion.ts';
import { createLiveAgents } from './service/live.ts';
import { createMcpServerService, type McpServerService } from './service/mcp.ts';
import { createAgentLookup, createDeletionMarks, getAgent, toAgent } from './service/records.ts';
import { createRemoteRegistration, remoteDefiner } from './service/remote.ts';
import { createSandboxBinding } from './service/sandbox.ts';
import { type AgentUsage, createAgentUsage } from './service/usage.ts';
import type {
  Agent,
  CallOptions,
  CreateAgentRequest,
  RemoteToolSpec,
  StepView,
  ToolRuntime,
  ToolSurface,
} from './types.ts';

export interface AgentServiceOptions {
  /** Without `sessionState`, todos, goals and plan mode live in memory only (unit tests). */
  store: Pick<Store, 'agents' | 'events' | 'requests'> &
    Partial<Pick<Store, 'plugins' | 'sessionState' | 'teams'>>;
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
  /** Told the id of every agent deleted, once it is marked deleted (its schedules go with it). */
  onAgentDeleted?: (agentId: string) => void;
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
  };
}

export interface AgentService {
  create(tenantId: string, input: CreateAgentRequest): Promise<Agent>;
  /** Throws NOT_FOUND for unknown, deleted or another tenant's agents. */
  get(tenantId: string, id: string): Agent;
  list(tenantId: string): Agent[];
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
  session(agent: Agent): AgentSession;
  call(agent: Agent, calls: ToolCall[], options: CallOptions): Promise<ToolResult[]>;
  /** The agent's sandbox, created on first use (or re-adopted after a restart). */
  sandbox(agent: Agent): Promise<Sandbox>;
  /** The agent's creator plugins; NOT_FOUND when the service runs none. */
  plugins(agent: Agent): AgentPlugins;
  /** Starts the plugins that were running when the service last stopped; resolves to how many. */
  resumePlugins(onError?: (pluginId: string, error: unknown) => void): Promise<number>;
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

export function createAgentService(options: AgentServiceOptions): AgentService {
  const { store, sandboxes: provider } = options;
  const runtime = options.runtime ?? (options.registry ? createRegistryRuntime(options.registry) : undefined);
  if (runtime === undefined)
    throw new SandboxError('CONFIG_INVALID', 'createAgentService needs a registry (or a runtime).');
  const spawn =
    options.spawn ?? createRequestSpawner(store.requests, options.now ? { now: options.now } : {});
  let closing = false;
  const isClosing = () => closing;
  const marks = createDeletionMarks(store.agents);
  const lookup = createAgentLookup(store.agents, marks);
  const sandboxes = createSandboxBinding({ provider, agents: store.agents, marks });
  let plugins: PluginHost | undefined;
  const sessionState = store.sessionState ?? createMemorySessionStateStore();
  const live = createLiveAgents({
    agents: store.agents,
    runtime,
    marks,
    defineRemote: remoteDefiner(store.requests, options.now),
    sandboxOf: sandboxes.of,
    spawn,
    pluginsOf: (agent) => plugins?.of(agent),
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
      teams === undefined ? [] : teamToolsFor(teams, agent, options.children?.providers ?? []),
  });
  if (options.plugins !== undefined) {
    if (store.plugins === undefined)
      throw new SandboxError('CONFIG_INVALID', 'createAgentService runs plugins only with store.plugins.');
    plugins = createPluginHost(
      {
        store: store.plugins,
        agents: store.agents,
        events: store.events,
        requests: store.requests,
        liveOf: live.of,
      },
      options.plugins,
    );
  }
  const batches = createBatches({
    events: store.events,
    live,
    marks,
    isClosing,
    ...(options.observe ? { observe: options.observe } : {}),
  });
  const deletion = createDeletion({
    agents: store.agents,
    forget: lookup.forget,
    requests: store.requests,
    provider,
    marks,
    live,
    batches,
    sandboxes,
    ...(plugins ? { plugins } : {}),
    graceMs: options.deleteGraceMs ?? 5000,
    reapRetryMs: options.reapRetryMs ?? 30_000,
    isClosing,
    onDeleted(id, agent) {
      teams?.deleted(agent);
      options.onAgentDeleted?.(id);
    },
  });
  const create = createAgentCreation({
    agents: store.agents,
    live,
    maxima: provider.maxima,
    isClosing,
    forget: lookup.forget,
  });
  const teams: TeamService | undefined =
    store.teams === undefined
      ? undefined
      : createTeamService({
          store: { agents: store.agents, events: store.events, requests: store.requests, teams: store.teams },
          // A child asks for nothing but a teammate's team mode; create() narrows it to its parent.
          createChild: (parent, links) =>
            create(parent.tenantId, links.role === 'teammate' ? { teams: true } : {}, links),
          removeChild: (child) => remove(child.tenantId, child.id),
          toolNames: async (agent) => (await live.of(agent).tools.describe()).map((t) => t.name),
          interrupt: batches.interrupt,
          busy: batches.busy,
          ...(options.children?.limits ? { limits: options.children.limits } : {}),
          ...(options.children?.limitsOf ? { limitsOf: options.children.limitsOf } : {}),
          ...(options.now ? { now: options.now } : {}),
        });
  teams?.resume();

  /**
   * Deletes the agent and its descendants: all are marked deleted synchronously (deepest first,
   * so no child is ever left without its parent), then torn down together.
   */
  async function remove(tenantId: string, id: string): Promise<void> {
    const agent = getAgent(store.agents, tenantId, id);
    const doomed = teams?.descendants(agent) ?? [];
    const children = doomed.map((child) => deletion.delete(tenantId, child.id));
    const [own, ...settled] = await Promise.allSettled([deletion.delete(tenantId, id), ...children]);
    if (own?.status === 'rejected') throw own.reason;
    // A child deleted meanwhile by its own DELETE is gone either way.
    for (const outcome of settled)
      if (outcome.status === 'rejected' && (outcome.reason as { code?: string })?.code !== 'NOT_FOUND')
        throw outcome.reason;
  }

  async function appendMessages(agent: Agent, messages: readonly ConversationMessage[]) {
    live.of(agent); // NOT_FOUND once the agent is gone
    const appended = store.events.append(messageEvents(agent.sessionId, messages));
    await store.events.flush();
    return appended;
  }

  async function close(graceMs = 10_000): Promise<void> {
    closing = true;
    deletion.stopRetrying();
    teams?.close();
    await batches.drain(graceMs);
    await plugins?.close();
    live.retireAll();
    await provider.close();
  }

  return {
    create: (tenantId, input) => create(tenantId, input),
    get: lookup.get,
    list: (tenantId) => store.agents.list(tenantId).map(toAgent),
    delete: remove,
    appendMessages,
    teams() {
      if (teams === undefined)
        throw new SandboxError('NOT_FOUND', 'This service keeps no child agents (its store has no teams).');
      return teams;
    },
    reapDeleted: deletion.reapDeleted,
    onDeleted: deletion.onDeleted,
    async tools(agent) {
      await plugins?.ready(agent.id);
      return { mode: agent.mode, tools: await live.of(agent).tools.describe() };
    },
    async step(agent) {
      // As tools(): after a restart, the step waits for the agent's running plugins (their tools).
      await plugins?.ready(agent.id);
      const { id, expiresAt, tools } = await live.of(agent).tools.step();
      return { stepId: id, expiresAt, mode: agent.mode, tools };
    },
    session: (agent) => live.of(agent).session,
    async call(agent, calls, callOptions) {
      // After a restart, an agent's calls wait until its running plugins are back (their tools with them).
      await plugins?.ready(agent.id);
      return batches.call(agent, calls, callOptions);
    },
    sandbox: sandboxes.of,
    plugins(agent) {
      if (plugins === undefined)
        throw new SandboxError('NOT_FOUND', 'This service runs no plugins (it has no isolate host).');
      live.of(agent); // NOT_FOUND once the agent is gone
      return plugins.of(agent);
    },
    resumePlugins: (onError) => plugins?.resume(onError) ?? Promise.resolve(0),
    registerRemoteTools: createRemoteRegistration({
      agents: store.agents,
      events: store.events,
      remoteOf: (agent) => live.of(agent).remote,
    }),
    mcpServers: createMcpServerService({
      events: store.events,
      mcpOf: (agent) => live.of(agent).mcp,
      ...(options.mcpLimitsOf ? { limitsOf: options.mcpLimitsOf } : {}),
      remote: options.egress !== undefined,
    }),
    usage: createAgentUsage({ agents: store.agents, provider, sandboxes, batches }),
    liveSandboxes: sandboxes.size,
    inFlight: batches.size,
    close,
  };
}
