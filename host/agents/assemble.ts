// Composition of the tool side of the control plane: the registry with the builtin sandbox tools
// installed globally (which of them each preset gets is its entry's business, host/agents/presets/),
// the timeout policy (the one place declared deadlines are enforced), the code-mode executor and
// the workflow tools over an isolate host, the cordis_* tools and their plugin host (which forks
// plugin workers of its own) beside it, approvals as host requests, the session log tools and the
// schedules (when the store has search and schedules), the tenants' skill catalogs and their
// `skill` tools (when it has skills), the team task boards and their team_task_* tools (when it
// has teamBoards), the checkpoints of the file calls and the model's checkpoint and rollback tools
// (with a checkpoint folder), and the agent service.
// The sandbox provider and the isolate host are injected, so this module loads neither dockerode
// nor isolated-vm; serve.ts, the integration tests and the bench pass the real ones.
import { timeoutPolicy } from '../../policies/index.ts';
import { registerCordisTools } from '../cordis/cordis-tools.ts';
import type { PluginHostOptions } from '../cordis/host.ts';
import type { Egress } from '../egress/index.ts';
import type { IsolateHost } from '../isolates/index.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import { createScheduler, type Scheduler, type SchedulerOptions } from '../schedules/scheduler.ts';
import { createSkillCatalog, type SkillCatalog } from '../skills/catalog.ts';
import type { SkillLimits } from '../skills/package.ts';
import type { Store } from '../store/index.ts';
import { createTeamBoard, type TeamBoard, type TeamBoardOptions } from '../teams/board/board.ts';
import { registerTeamTaskTools } from '../teams/board/tools.ts';
import { createTeamDirectory } from '../teams/directory.ts';
import {
  builtinTools,
  type SessionAccess,
  scheduleTools,
  sessionLogTools,
  skillTool,
} from '../tools/builtin/index.ts';
import { lspTool } from '../tools/builtin/lsp/tool.ts';
import {
  createRegistry,
  createRequestApprovals,
  type ToolRegistry,
  type ToolResult,
} from '../tools/index.ts';
import { type CodeModeBudget, createPtcExecutor } from '../tools/ptc/index.ts';
import type { AgentScope } from '../tools/types.ts';
import { registerWorkflowTools } from '../tools/workflow/index.ts';
import { createCheckpointStore } from './checkpoints/store.ts';
import { registerCheckpointTools } from './checkpoints/tools.ts';
import { type CheckpointTracker, createCheckpointTracker } from './checkpoints/tracker.ts';
import { withinOperator, withinTenant } from './checkpoints/types.ts';
import { configOf } from './configs.ts';
import { createRegistryRuntime } from './runtime.ts';
import { type AgentService, type AgentServiceOptions, createAgentService } from './service.ts';
import { createSkillLayers, type SkillLayers } from './skill-layers.ts';
import { registerWebTools } from './web.ts';

export interface AssembleOptions {
  /** With `search` the session_* tools are installed, with `schedules` the schedule_* tools. */
  store: Pick<Store, 'agents' | 'events' | 'requests'> &
    Partial<Pick<Store, 'plugins' | 'search' | 'schedules' | 'skills' | 'teamBoards' | 'teams' | 'wake'>>;
  sandboxes: SandboxProvider;
  /** Options of the creator-plugin runtime, used with an isolate host and `store.plugins`. Default {}. */
  plugins?: PluginHostOptions;
  /** Runs run_code programs and workflow scripts; without one, code and both modes answer NO_EXECUTOR and no agent gets workflow or ralph. */
  isolates?: IsolateHost;
  /**
   * Budgets of run_code programs: the defaults, and the most an agent may ask for (its
   * `codeMode`). Default CODE_MODE_DEFAULTS and CODE_MODE_MAXIMA.
   */
  codeMode?: { defaults?: CodeModeBudget; maxima?: CodeModeBudget };
  /** How long a person has to answer an `ask`. Default 300000 ms. */
  approvalTtlMs?: number;
  /** Deadline for tools that declare none. Default: none. */
  defaultToolTimeoutMs?: number;
  observe?: (result: ToolResult, remote: boolean) => void;
  /** Limits and clock of the scheduler (count per agent, shortest period, reminder expiry). */
  schedules?: Pick<
    SchedulerOptions,
    'maxPerAgent' | 'maxPerTenant' | 'minPeriodMs' | 'reminderTtlMs' | 'now' | 'onError' | 'mayFire'
  >;
  /** Limits of the skill catalogs (DEFAULT_SKILL_LIMITS) and where their uploads spool (OS temp dir). */
  skills?: Partial<SkillLimits> & { spoolDir?: string };
  /**
   * The egress gateway and web access (host/egress): web_fetch and web_search are installed, and
   * agents' remote MCP servers are reached through the gateway. Without it neither tool exists and
   * remote MCP servers are refused.
   */
  egress?: Egress;
  /**
   * The team task boards (with `store.teamBoards`): the service's limits (DEFAULT_BOARD_LIMITS),
   * each tenant's, and who is in which team (default: every agent leads a team of its own).
   */
  teams?: Pick<TeamBoardOptions, 'limits' | 'limitsOf' | 'directory'>;
  /** Child agents and teams (with `store.teams`): limits and the provider bundles with aliases. */
  children?: AgentServiceOptions['children'];
  /** Told once a delete removed an agent whole (replicas: a family's end). */
  onRemoved?: AgentServiceOptions['onRemoved'];
  /** The sandbox runtimes each tenant may ask for besides runc. Default: none. */
  runtimes?: AgentServiceOptions['runtimes'];
  /** A child with a workspace of its own, held to its tenant's disk quota. Default: none. */
  admitWorkspace?: AgentServiceOptions['admitWorkspace'];
  /** The operator's bound on a frozen pause. Default: none. */
  freeze?: AgentServiceOptions['freeze'];
  /**
   * Where the agents' checkpoints are kept (a folder per agent); `serve` passes
   * `<dataDir>/checkpoints`. Default: none, nothing tracked and no rollback.
   */
  checkpointDir?: string;
  /** The operator's maximum of an agent's checkpoint bytes, over its tenant's setting (DSH_CHECKPOINT_MAX_BYTES). */
  checkpointMaxBytes?: number;
  /**
   * Bytes all of a tenant's agents' checkpoints may keep together (its `checkpointBytes` quota, else
   * DSH_TENANT_CHECKPOINT_MAX_BYTES). Default: no such bound.
   */
  checkpointTenantMaxBytes?: (tenantId: string) => number | undefined;
}

export interface Assembled {
  registry: ToolRegistry;
  agents: AgentService;
  /** Fires the agents' schedules; started here, closed by whoever closes the store. */
  scheduler?: Scheduler;
  /** The tenants' skill catalogs (/v1/skills), with `store.skills`. */
  skills?: SkillCatalog;
  /** The team task boards (`onBoardChange` tells every change), with `store.teamBoards`. */
  teamBoard?: TeamBoard;
}

export const assembleAgents = (options: AssembleOptions): Assembled => {
  const { store } = options;
  const registry = createRegistry({
    log: store.events,
    approvals: createRequestApprovals(
      store.requests,
      options.approvalTtlMs === undefined ? {} : { ttlMs: options.approvalTtlMs },
    ),
  });
  for (const tool of builtinTools()) registry.global.register(tool);
  // Language servers run in the agent's container on sandboxd's pipes.
  if (options.sandboxes.flags.stdio) registry.global.register(lspTool());
  timeoutPolicy(
    options.defaultToolTimeoutMs === undefined ? {} : { defaultMs: options.defaultToolTimeoutMs },
  ).install(registry.global);
  if (options.isolates !== undefined) {
    const codeMode = options.codeMode ?? {};
    registry.global.mount(
      createPtcExecutor({
        isolates: options.isolates,
        ...(codeMode.defaults ? { limits: codeMode.defaults } : {}),
        ...(codeMode.maxima ? { maxima: codeMode.maxima } : {}),
        // The agent's stored config: read where it is kept, so the agent service needs no part in it.
        codeModeOf: (agent) => configOf(agent)?.codeMode,
      }),
    );
    // Offered only to agents created with `subagents: true` (see the tools' condition).
    registerWorkflowTools(registry.global, { isolates: options.isolates });
    // Offered only to agents whose service runs plugins, and named only by the creator preset.
    if (store.plugins !== undefined) registerCordisTools(registry.global);
  }
  const plugins = options.isolates !== undefined && store.plugins !== undefined;
  if (store.search !== undefined) {
    const port = {
      events: store.events,
      search: store.search,
      accessOf: (agent: AgentScope): SessionAccess => configOf(agent)?.policy?.sessions ?? 'tenant',
    };
    for (const tool of sessionLogTools(port)) registry.global.register(tool);
  }
  const scheduler =
    store.schedules === undefined
      ? undefined
      : createScheduler({
          schedules: store.schedules,
          events: store.events,
          requests: store.requests,
          agents: store.agents,
          ...options.schedules,
        });
  if (scheduler !== undefined) for (const tool of scheduleTools(scheduler)) registry.global.register(tool);
  const teamBoard =
    store.teamBoards === undefined
      ? undefined
      : createTeamBoard({
          store: store.teamBoards,
          events: store.events,
          // Teams are the leads and the teammates they spawned (host/teams/directory.ts).
          directory: createTeamDirectory(store.agents),
          ...options.teams,
        });
  if (teamBoard !== undefined) registerTeamTaskTools(registry.global);
  const skills = skillsOf(store, options.skills);
  if (options.egress !== undefined) registerWebTools(registry.global, { web: options.egress.web, configOf });
  // Read late: the tenants' settings belong to the agent service made below.
  let settingsOf: () => AgentService['settings'] | undefined = () => undefined;
  const checkpoints = checkpointsOf(
    options.checkpointDir,
    () => settingsOf(),
    options.sandboxes,
    options.checkpointMaxBytes,
    options.checkpointTenantMaxBytes,
  );
  if (checkpoints !== undefined) registerCheckpointTools(registry.global, () => settingsOf());
  // Installed last: each tenant's layer shadows it (keeping its place at the end of the list).
  if (skills !== undefined) registry.global.register(skillTool(skills.catalog));
  const agents = createAgentService({
    store,
    registry,
    ...(skills === undefined
      ? {}
      : {
          runtime: createRegistryRuntime(registry, {
            parentOf: skills.layers.parentOf,
            ready: skills.layers.ready,
          }),
        }),
    sandboxes: options.sandboxes,
    ...(options.egress === undefined ? {} : { egress: options.egress.gateway }),
    ...(plugins ? { plugins: options.plugins ?? {} } : {}),
    ...(options.observe ? { observe: options.observe } : {}),
    // None rejects (their failures go to onError, or are dropped): a delete does not fail for them.
    onAgentDeleted: async (id: string) => {
      await Promise.all([
        scheduler?.removeAgent(id),
        teamBoard?.releaseOwner(id),
        checkpoints?.forget(id).catch(() => undefined),
      ]);
    },
    ...(checkpoints === undefined ? {} : { checkpoints }),
    ...(teamBoard === undefined ? {} : { teamBoard }),
    ...(options.children === undefined ? {} : { children: options.children }),
    ...(options.onRemoved === undefined ? {} : { onRemoved: options.onRemoved }),
    ...(options.runtimes === undefined ? {} : { runtimes: options.runtimes }),
    ...(options.admitWorkspace === undefined ? {} : { admitWorkspace: options.admitWorkspace }),
    ...(options.freeze === undefined ? {} : { freeze: options.freeze }),
  });
  settingsOf = () => agents.settings;
  scheduler?.start();
  return {
    registry,
    agents,
    ...(scheduler === undefined ? {} : { scheduler }),
    ...(skills === undefined ? {} : { skills: skills.catalog }),
    ...(teamBoard === undefined ? {} : { teamBoard }),
  };
};

/** The catalog over `store.skills`, and the tenant layers that re-make `skill` when it changes. */
function skillsOf(
  store: AssembleOptions['store'],
  options: AssembleOptions['skills'] = {},
): { catalog: SkillCatalog; layers: SkillLayers } | undefined {
  if (store.skills === undefined) return undefined;
  const { spoolDir, ...limits } = options;
  const catalog = createSkillCatalog({
    store: store.skills,
    limits,
    ...(spoolDir === undefined ? {} : { spoolDir }),
  });
  const layers = createSkillLayers({
    skills: catalog,
    events: store.events,
    agentsOf: async (tenantId) =>
      (await store.agents.list(tenantId)).map((agent) => ({ sessionId: agent.id })),
  });
  catalog.onChange(layers.refresh);
  // Other processes sharing the store reload the tenant's listing (a `config` wake-up); the
  // subscriptions last as long as the store's bus. A failed reload leaves the last listing: the
  // next change or resync loads again.
  const { wake } = store;
  if (wake !== undefined) {
    catalog.onChange((tenantId) => wake.publish('config', tenantId));
    wake.subscribe('config', (tenantId) => void layers.reload(tenantId).catch(() => undefined));
    wake.onResync(() => void layers.reloadAll().catch(() => undefined));
  }
  return { catalog, layers };
}

/** The tracker over files under `dir`, each tenant's bounds from its settings; none without a dir. */
function checkpointsOf(
  dir: string | undefined,
  settings: () => AgentService['settings'] | undefined,
  provider: SandboxProvider,
  maxBytes = Number.POSITIVE_INFINITY,
  tenantMaxBytes: (tenantId: string) => number | undefined = () => undefined,
): CheckpointTracker | undefined {
  if (dir === undefined) return undefined;
  return createCheckpointTracker({
    store: createCheckpointStore(dir),
    // Snapshot checkpoints (bash, `checkpoints.snapshotBash`): their files deleted when dropped.
    dropSnapshot: async ({ id, node }) => provider.dropSnapshot?.(id, node),
    boundsOf: async (tenantId) => {
      const reader = settings();
      return withinTenant(
        withinOperator((await reader?.get(tenantId))?.checkpoints ?? { maxBytes: 0, maxCount: 0 }, maxBytes),
        tenantMaxBytes(tenantId),
      );
    },
  });
}
