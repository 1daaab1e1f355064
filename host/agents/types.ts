// The agent vocabulary shared by host/agents and host/api: what an agent is, what it is created
// from, and the port to the tool runtime (host/tools) the agent service drives. Types only.
// An Agent = tenant + preset + presentation mode + restrictions + policy + its own registrations
// (remote tools) + its sandbox (provider-owned, keyed by agent id) + its session (the event log
// session id, equal to the agent id).

import type { AgentPolicy, PolicySpec } from '../../policies/index.ts';
import type { EgressRule } from '../egress/rules.ts';
import type { SandboxRuntime } from '../sandbox/runtimes.ts';
import type { AgentLinks } from '../store/index.ts';
import type { SessionEvent } from '../store/types.ts';
import type { Disposer } from '../tools/disposer.ts';
import type {
  AgentScope,
  CallProvenance,
  JsonSchema,
  PresentationMode,
  ToolCall,
  ToolDefinition,
  ToolResult,
  ToolSchema,
} from '../tools/types.ts';
import type { Preset } from './presets/index.ts';

export type { AgentLinks, AgentPolicy, PresentationMode, Preset };

/** `allow`: only these inherited tools stay visible; `deny`: these are hidden. */
export type AgentRestriction = { allow: string[] } | { deny: string[] };

export interface SandboxOptions {
  memoryMb?: number;
  cpus?: number;
  pids?: number;
  /** Size of the workspace file system in MiB. */
  diskMb?: number;
  /** The container runtime (host/sandbox/runtimes.ts); default runc. Checked at creation (sandbox-runtime.ts). */
  runtime?: SandboxRuntime;
}

/** A tool the client executes: calls become `remote_tool` host requests the client answers. */
export interface RemoteToolSpec {
  name: string;
  description: string;
  /** Object-rooted JSON Schema of the arguments, validated by a real JSON Schema validator. */
  parameters: JsonSchema;
  /** How long the client has to answer one call. Default 300000 ms. */
  timeoutMs?: number;
  /** True lets calls overlap with sibling concurrency-safe calls. Default false. */
  concurrencySafe?: boolean;
  /** True declares that the tool changes nothing, so plan mode lets it run. Default false (refused in plan mode). */
  readOnly?: boolean;
}

/** Budgets of this agent's run_code programs, within the service's maxima (DSH_CODE_*_MAX_MS). */
export interface CodeModeOptions {
  /** CPU time of a program's own work, in ms. Default: the service's (DSH_CODE_CPU_MS). */
  cpuMs?: number;
  /** Wall-clock time of a run, waiting on its tools included, in ms. Default: the service's (DSH_CODE_WALL_MS). */
  wallMs?: number;
}

/**
 * What an agent is created from; stored as the agent's config. A child's or teammate's is its
 * parent's narrowed by what it asks for (./inherit.ts has one rule per field: add one with a field).
 */
export interface AgentConfig {
  restrict?: AgentRestriction;
  /**
   * Per-agent policy, installed (as the specs `agentPolicies` makes of it) in the agent's own scope,
   * so it sees inner calls of programs too.
   */
  policy?: AgentPolicy;
  sandbox?: SandboxOptions;
  remoteTools?: RemoteToolSpec[];
  /**
   * The client runs subagents: the agent gets the `workflow` and `ralph` tools (standard, code and
   * creator presets), whose agent() steps become `subagent` host requests, and the child-control
   * tools (`subagent`, `subagent_fork`, `list_agents`, `send_message`, `interrupt_agent`, and the
   * `subagent_<provider>` aliases the service is configured with): children are agents of the
   * service (host/teams/). Default false.
   */
  subagents?: boolean;
  /**
   * The Agent Teams composition: the team task board tools (team_task_create, _get, _list,
   * _update), `spawn_teammate`, `followup_task`, `wait_agent` and the team-aware `list_agents`,
   * `send_message` and `interrupt_agent`, which replace the child-control ones of the same names
   * (standard, code and creator presets). The agent leads the team its teammates join. Default false.
   */
  teams?: boolean;
  /**
   * Where this agent's children work: `shared` (default), in its own workspace (the sandbox of the
   * top-level agent they descend from); `isolated`, each in a sandbox of its own that starts as a
   * copy of its parent's workspace when the child first uses it. Children inherit the choice.
   */
  childWorkspace?: 'shared' | 'isolated';
  /**
   * Set by the service on a child whose parent chose `childWorkspace: "isolated"`: it has a sandbox
   * of its own, seeded from its parent's. Not accepted from clients.
   */
  isolatedWorkspace?: boolean;
  /**
   * The snapshot (POST /v1/agents/:id/snapshots) whose copy the agent's workspace starts as, made
   * at creation; its disk limit is the snapshot's. Top-level agents only (a child never has one).
   */
  fromSnapshot?: string;
  /** Budgets of its run_code programs (code and both modes). */
  codeMode?: CodeModeOptions;
  /**
   * Offers `web_fetch` (standard, code and creator presets). Default false: the seed's standard
   * preset sets `fetch: false`, so an agent reads pages only when its creator says so.
   */
  fetch?: boolean;
  /**
   * Narrows the tenant's egress allowlist for this agent: a destination must match a rule here as
   * well as one of the tenant's. Absent: the tenant's list as it is. It can never widen it.
   */
  egress?: { allow: EgressRule[] };
}

export interface CreateAgentRequest extends AgentConfig {
  preset?: Preset;
  mode?: PresentationMode;
}

export interface Agent {
  id: string;
  tenantId: string;
  preset: Preset;
  mode: PresentationMode;
  /** The durable log session of this agent's calls (equal to its id). */
  sessionId: string;
  config: AgentConfig;
  /** Present for a child or teammate: the agent that made it, its role, depth, team and name. */
  links?: AgentLinks;
  createdAt: number;
}

export interface CallOptions {
  signal: AbortSignal;
  /** Every session event of this batch (calls, inner calls, results, host requests) as it is appended. */
  onProgress?: (event: SessionEvent) => void;
  /** The step (AgentService.step) whose tool set the batch runs against. Default: a set of its own. */
  step?: string;
}

/** A step: the tools the model sees, resolved once; calls naming it run against exactly that set. */
export interface StepView extends ToolSurface {
  stepId: string;
  /** When the step stops being usable (epoch ms). */
  expiresAt: number;
}

/** The tool surface the model sees for one agent. */
export interface ToolSurface {
  mode: PresentationMode;
  tools: ToolSchema[];
}

// ---- the port to host/tools -------------------------------------------------------------

export interface AgentToolsSpec {
  agent: AgentScope;
  preset: Preset;
  mode: PresentationMode;
  restrict?: AgentRestriction;
  /** Definitions owned by this agent (remote tools): they shadow inherited names. */
  own: ToolDefinition[];
  /** The agent's policies, installed in its own scope through policies/ in this order. */
  policies: readonly PolicySpec[];
}

/** One agent's view of the registry: its scope (global → preset → agent) and its executor. */
export interface AgentTools {
  /** Exactly what the model sees in the agent's mode. */
  describe(): Promise<ToolSchema[]>;
  /**
   * Runs one batch through the one pipeline; results in call order; never rejects for tool failures.
   * With a provenance (a plugin's code makes the calls) they run as native calls and are log-only.
   */
  execute(
    calls: ToolCall[],
    signal: AbortSignal,
    provenance?: CallProvenance,
    /** Run against this step's set (STEP_NOT_FOUND when unknown or expired) instead of a fresh one. */
    step?: string,
  ): Promise<ToolResult[]>;
  /** Resolves a set and keeps it as a step: what the model sees with it, to call against it later. */
  step(): Promise<{ id: string; expiresAt: number; tools: ToolSchema[] }>;
  /** Adds an agent-owned tool (remote tools, plugin tools). */
  register(definition: ToolDefinition): Disposer;
  /**
   * A tool of this name is installed in a layer the agent inherits (the service's or its preset's),
   * visible to it or not: what a plugin's tool may never shadow.
   */
  inherits(name: string): boolean;
  dispose(): void;
}

/** What the agent service needs from host/tools. */
export interface ToolRuntime {
  forAgent(spec: AgentToolsSpec): AgentTools;
  /** Names of the tools a preset inherits (for validation of restrictions and docs). */
  presetTools(preset: Preset): string[];
}
