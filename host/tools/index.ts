// The curated entry of the tool runtime. Everything a tool author, a policy, an executor or the
// API needs is exported here by name; internals (layers, gate, pipeline stages) are not.
// Nothing here loads Docker or isolated-vm.
export { defineTool, type ToolOptions } from './define.ts';
export { defineJsonSchemaTool, detectDraft, jsonSchemaValidator, type JsonSchemaToolOptions } from './json-schema-tool.ts';
export { createRegistry, type ExecuteOptions, type ResolveContext, type ToolRegistry, type ToolScope } from './registry.ts';
export { RESERVED_NAME, type RegistryOptions, type Restriction } from './layers.ts';
export type { Condition, ConditionContext, ResolvedToolSet } from './resolved-set.ts';
export { createNativeExecutor, toToolSchema, type Executor, type ExecutorBatch, type ExecutorKind, type PtcExecutor } from './executor.ts';
export {
  PHASES, type CallView, type Decision, type ExecuteView, type ExecuteWrapper, type Guard, type Outcome, type Phase,
  type PhaseListeners, type PostExecuteAction, type PostExecuteListener, type PreExecuteListener, type ResultListener,
} from './hooks.ts';
export { createRequestApprovals, type ApprovalAnswer, type ApprovalRequest, type Approvals, type RequestApprovalsOptions } from './approvals.ts';
export { errorContent, renderValue } from './content.ts';
export type { Disposer } from './disposer.ts';
export {
  PRESENTATION_MODES, type AgentScope, type ContentPart, type ExecContext, type JsonSchema, type JsonValue, type ModelSelection,
  type PresentationMode, type ToolCall, type ToolDefinition, type ToolError, type ToolResult, type ToolSchema, type ToolServices,
} from './types.ts';
