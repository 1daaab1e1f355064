// Executors: what turns a batch of model calls into results, and what the model is told about
// tools. One interface for both kinds; `native` exposes each visible tool directly, `ptc` exposes
// the single `run_code` tool whose description embeds the generated `tools.*` SDK. Executors are
// mounted per scope (nearest wins) and looked up when a description or a batch runs.
import { toolAnnotations } from './annotations.ts';
import type { ResolvedToolSet } from './resolved-set.ts';
import type { AgentScope, ToolCall, ToolDefinition, ToolResult, ToolSchema } from './types.ts';

export type ExecutorKind = 'native' | 'ptc';

/** What an executor gets for one batch. */
export interface ExecutorBatch {
  readonly calls: readonly ToolCall[];
  readonly agent: AgentScope;
  readonly toolSet: ResolvedToolSet | undefined;
  readonly signal: AbortSignal;
  /** The executable definitions this batch may call (what `describe` was given). */
  definitions(): ToolDefinition[];
  /**
   * The shared pipeline and scheduler: validation, policy, execution, logging; results in call
   * order. `definition` makes every call run that definition instead of a registry lookup — the
   * PTC executor passes its own `run_code` definition this way (it is never registered).
   */
  run(calls: readonly ToolCall[], options?: { definition?: ToolDefinition }): Promise<ToolResult[]>;
}

export interface Executor {
  readonly name: string;
  readonly kind: ExecutorKind;
  /** The schemas the model sees for these definitions, as shown to `agent` when known. Pure. */
  describe(definitions: readonly ToolDefinition[], agent?: AgentScope): ToolSchema[];
  /** Settles every call of the batch, in call order. Never rejects for an ordinary tool failure. */
  execute(batch: ExecutorBatch): Promise<ToolResult[]>;
}

/**
 * The contract of the code-mode executor (built in host/tools/ptc with host/isolates):
 * `describe(definitions)` returns exactly one schema, `run_code`, whose description embeds the SDK
 * generated from `definitions`; `execute(batch)` runs each `run_code` call's program, typically via
 * `batch.run(batch.calls, { definition: runCodeDefinition })` so the program itself is validated,
 * policed and logged, while its `tools.*` bindings re-enter the pipeline with `exec.callTool()`
 * as inner, log-only calls against the same tool set.
 */
export interface PtcExecutor extends Executor {
  readonly kind: 'ptc';
}

/** The model-facing projection: name, description, parameters, hints (and deferLoading when set). */
export const toToolSchema = (definition: ToolDefinition): ToolSchema => {
  const schema: ToolSchema = {
    name: definition.name,
    description: definition.description,
    parameters: definition.parameters,
    annotations: toolAnnotations(definition),
  };
  if (definition.deferLoading === true) schema.deferLoading = true;
  return schema;
};

/** Exposes every visible tool as itself and runs the batch through the shared pipeline. */
export const createNativeExecutor = (): Executor => ({
  name: 'native',
  kind: 'native',
  describe: (definitions) => definitions.map(toToolSchema),
  execute: (batch) => batch.run(batch.calls),
});
