// The shapes of the tool runtime's public face (registry.ts re-exports them): a scope, the
// registry, and what resolving and executing take.

import type { EventLog } from '../store/types.ts';
import type { Disposer } from './disposer.ts';
import type { Executor } from './executor.ts';
import type { Guard, Phase, PhaseListeners } from './hooks.ts';
import type { Restriction } from './layers.ts';
import type { Condition, ResolvedToolSet } from './resolved-set.ts';
import type {
  AgentScope,
  CallProvenance,
  ModelSelection,
  PresentationMode,
  ToolCall,
  ToolDefinition,
  ToolResult,
  ToolSchema,
} from './types.ts';

export interface ResolveContext {
  agent: AgentScope;
  modelSelection?: ModelSelection;
  signal?: AbortSignal;
}

export interface ExecuteOptions {
  agent: AgentScope;
  /** Which surface the model was shown. Default 'native'. */
  mode?: PresentationMode;
  /** The step's resolved set; without one, conditional tools are UNKNOWN_TOOL. */
  toolSet?: ResolvedToolSet;
  /** Caller-owned cancellation for every call of the batch. */
  signal?: AbortSignal;
  /** Overrides the registry's log for this batch; `null` records nothing (calls outside a step). */
  log?: EventLog | null;
  /** Pool size for consecutive concurrency-safe calls. Default: the registry's (8). */
  concurrency?: number;
  /** Whose code makes these calls (a plugin's): logged with each, and log-only. Default: none. */
  provenance?: CallProvenance;
}

export interface ToolScope {
  readonly id: number;
  readonly name: string;
  readonly parent: ToolScope | undefined;
  /** A new nearer layer (e.g. one agent) that reads this one live and never changes it. */
  child(name: string): ToolScope;
  register(definition: ToolDefinition, options?: { when?: Condition }): Disposer;
  /** Masks inherited tools of this scope and its children; masks intersect; own tools survive. */
  restrict(restriction: Restriction): Disposer;
  on<P extends Phase>(phase: P, listener: PhaseListeners[P]): Disposer;
  guard(guard: Guard): Disposer;
  mount(executor: Executor): Disposer;
  /** The definition as this scope sees it; without a set, conditions are not evaluated. */
  get(name: string, toolSet?: ResolvedToolSet): ToolDefinition | undefined;
  definitions(toolSet?: ResolvedToolSet): ToolDefinition[];
  schemas(toolSet?: ResolvedToolSet): ToolSchema[];
  /** The execution lookup: applies the set; without one, conditional registrations are excluded. */
  executable(name: string, toolSet?: ResolvedToolSet): ToolDefinition | undefined;
  /** Evaluates conditions once for a step. A throwing condition rejects with TOOL_ACTIVATION_FAILED. */
  resolve(context: ResolveContext): Promise<ResolvedToolSet>;
  /** Exactly the tool schemas the model sees in this mode. */
  surface(mode: PresentationMode, toolSet?: ResolvedToolSet): ToolSchema[];
  execute(calls: readonly ToolCall[], options: ExecuteOptions): Promise<ToolResult[]>;
}

export interface ToolRegistry {
  /** The global layer. */
  readonly global: ToolScope;
  /** A named child of the global layer (a preset), created on first use. */
  scope(name: string): ToolScope;
  get(name: string, scope: ToolScope, toolSet?: ResolvedToolSet): ToolDefinition | undefined;
  definitions(scope: ToolScope, toolSet?: ResolvedToolSet): ToolDefinition[];
  schemas(scope: ToolScope, toolSet?: ResolvedToolSet): ToolSchema[];
  executable(name: string, scope: ToolScope, toolSet?: ResolvedToolSet): ToolDefinition | undefined;
  surface(scope: ToolScope, mode: PresentationMode, toolSet?: ResolvedToolSet): ToolSchema[];
}
