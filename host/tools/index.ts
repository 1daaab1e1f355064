// The curated entry of the tool runtime. Everything a tool author, a policy, an executor or the
// API needs is exported here by name; internals (layers, gate, pipeline stages) are not.
// Nothing here loads Docker or isolated-vm.

export { type Follower, followSignal, follows } from '../follow-signal.ts';
export {
  type ApprovalAnswer,
  type ApprovalRequest,
  type Approvals,
  createRequestApprovals,
  type RequestApprovalsOptions,
} from './approvals.ts';
export { errorContent, renderValue, type WithContent, withContent } from './content.ts';
export { backstopTimeout, defineTool, TIMEOUT_GRACE_MS, ToolName, type ToolOptions } from './define.ts';
export type { Disposer } from './disposer.ts';
export {
  createNativeExecutor,
  type Executor,
  type ExecutorBatch,
  type ExecutorKind,
  type PtcExecutor,
  toToolSchema,
} from './executor.ts';
export {
  type CallView,
  type Decision,
  type ExecuteView,
  type ExecuteWrapper,
  type Guard,
  type GuardDenial,
  type Outcome,
  PHASES,
  type Phase,
  type PhaseListeners,
  type PostExecuteAction,
  type PostExecuteListener,
  type PreExecuteListener,
  type ResultListener,
} from './hooks.ts';
export {
  defineJsonSchemaTool,
  detectDraft,
  type JsonSchemaToolOptions,
  jsonSchemaValidator,
} from './json-schema-tool.ts';
export { RESERVED_NAME, type RegistryOptions, type Restriction } from './layers.ts';
export {
  createRegistry,
  type ExecuteOptions,
  type ResolveContext,
  type ToolRegistry,
  type ToolScope,
} from './registry.ts';
export type { Condition, ConditionContext, ResolvedToolSet } from './resolved-set.ts';
export {
  type AgentScope,
  type CallProvenance,
  type ContentPart,
  type ExecContext,
  type JsonSchema,
  type JsonValue,
  type ModelSelection,
  PRESENTATION_MODES,
  type PresentationMode,
  type ToolCall,
  type ToolDefinition,
  type ToolError,
  type ToolResult,
  type ToolSchema,
  type ToolServices,
} from './types.ts';
